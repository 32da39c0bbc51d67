"""`annotate annotators`: reviewers and experts under stable pseudonyms (A1, A2, ...; E1, ...).

The e-mail stays in the store; every output names the annotator by the pseudonym only. With a
server, the Label Studio user is created at once and an invite link returned; offline (or with
no server running) the user is created when a round is first routed to a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from annotate.errors import InputError, LabelStudioError

if TYPE_CHECKING:
    import pandas as pd

    from annotate.pipeline.session import Session


@dataclass
class AnnotatorAdded:
    pseudonym: str
    created: bool
    ls_user_id: int | None
    invite_url: str | None
    note: str | None = None


def add_annotator(
    s: Session, email: str, name: str | None, *, role: str = "annotator", offline: bool = False
) -> AnnotatorAdded:
    if "@" not in email or email.startswith("@") or email.endswith("@"):
        raise InputError(f"{email!r} is not an e-mail address")
    user_id: int | None = None
    invite: str | None = None
    reached = False
    if not offline:
        try:
            gw = s.connect(s.ws)
        except LabelStudioError:
            gw = None  # no server running: register locally
        if gw is not None:
            reached = True
            try:
                user_id = gw.create_user(email, first_name=name)
                invite = gw.invite_link()
            finally:
                gw.close()
    pseudonym, created = s.store.add_annotator(email, name, role)
    if user_id is not None:
        s.store.set_annotator_user(pseudonym, user_id)
    note = (
        None if reached else "registered locally; the Label Studio user is created when a round is routed to a server"
    )
    return AnnotatorAdded(pseudonym, created, user_id, invite, note)


def list_annotators(s: Session, *, show_emails: bool = False) -> pd.DataFrame:
    """Pseudonym, role and Label Studio user id (plus e-mail and name when asked)."""
    df = s.store.annotators()
    cols = ["pseudonym", "role", "ls_user_id"] + (["email", "name"] if show_emails else [])
    return df[cols] if len(df) else df.reindex(columns=cols)
