"""`annotate annotators`: reviewers and experts under stable pseudonyms (A1, A2, ...; E1, ...).

The e-mail stays in the store; every output names the annotator by the pseudonym only. On the
embedded servers each person gets a login of their own (``pipeline.ls``): when the servers run,
adding a person makes their server (one per person, the default) and their account with a
generated password, written into their access sheet; otherwise the next `annotate ls start`
does. An external server's admin makes the logins there (annotate creates the user when a round
is routed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from annotate.config import label_studio_settings
from annotate.errors import InputError, LabelStudioError
from annotate.pipeline._people import EXTERNAL_LOGIN, PersonLine, access_when_added, person_access

if TYPE_CHECKING:
    import pandas as pd

    from annotate.pipeline.session import Session


@dataclass
class AnnotatorAdded:
    pseudonym: str
    created: bool
    access: PersonLine | None  # their login, when a server for it runs
    note: str | None = None


def add_annotator(
    s: Session, email: str, name: str | None, *, role: str = "annotator", offline: bool = False
) -> AnnotatorAdded:
    if "@" not in email or email.startswith("@") or email.endswith("@") or any(c.isspace() for c in email):
        raise InputError(f"{email!r} is not an e-mail address")
    pseudonym, created = s.store.add_annotator(email, name, role)
    if offline:
        return AnnotatorAdded(pseudonym, created, None, "registered locally only (--offline)")
    if label_studio_settings(s.ws).url:
        return AnnotatorAdded(pseudonym, created, None, EXTERNAL_LOGIN.format(email=email))
    try:
        access = access_when_added(s, pseudonym)
    except LabelStudioError as exc:
        # The registration stands (a pseudonym is stable); the next `ls start` makes the rest.
        return AnnotatorAdded(
            pseudonym,
            created,
            None,
            f"their Label Studio login could not be made now ({exc}); `annotate ls start` retries",
        )
    note = None
    if access is None:
        note = "`annotate ls start` makes their Label Studio and login (a round in task files needs neither)"
    return AnnotatorAdded(pseudonym, created, access, note)


def annotator_access(s: Session, pseudonym: str, *, new_password: bool) -> PersonLine:
    """A person's login (their account ensured), with a new password on request."""
    return person_access(s, pseudonym, new_password=new_password)


def list_annotators(s: Session, *, show_emails: bool = False) -> pd.DataFrame:
    """Pseudonym, role and Label Studio user id (plus e-mail and name when asked)."""
    df = s.store.annotators()
    cols = ["pseudonym", "role", "ls_user_id"] + (["email", "name"] if show_emails else [])
    return df[cols] if len(df) else df.reindex(columns=cols)
