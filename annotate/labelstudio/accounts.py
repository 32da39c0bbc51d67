"""Reviewers' accounts: a login that works for each person, and the sheet that tells them how to start.

A Label Studio user created through the API has no usable password, and the organisation's
invite link is one link for everyone (signing up there with an e-mail that exists fails). So
annotate makes each person's account itself, through Label Studio's own web forms, with a
generated password (measured on 1.23.2):

* **creating** an account signs up with a fresh invite link of the person's own server
  (``GET /api/invite``, then the signup form with its CSRF token), then rotates the invite token
  (``POST /api/invite/reset-token``) so that the link can never be used again;
* **a new password** (``annotators access A1 --new-password``) goes through the Django admin's
  password form, logged in as the server's admin (annotate's own account, a superuser).

The password is shown to nobody by annotate: it is written once into the person's access sheet
(:func:`write_access_sheet`, mode 0600, under ``.annotate/access/``), which the lead hands to the
reviewer privately. Nothing here prints a password, a token or a cookie; HTTP errors carry the
status and the page's title only.
"""

from __future__ import annotations

import re
import secrets as _secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.errors import LabelStudioError

if TYPE_CHECKING:
    import httpx

    from annotate.labelstudio.server.secrets import Secrets

__all__ = [
    "AccessSheet",
    "Account",
    "create_account",
    "ensure_account",
    "new_password",
    "readdress_sheet",
    "set_password",
    "sheet_path",
    "write_access_sheet",
]

_CSRF = re.compile(r'name="csrfmiddlewaretoken"\s+value="([^"]+)"')
_FORM_ERROR = re.compile(r'class="[^"]*(?:error|errorlist)[^"]*"[^>]*>\s*(?:<li>)?\s*([^<]{3,200})', re.IGNORECASE)
_TIMEOUT = 30.0


def new_password() -> str:
    """A password a person can type: 4 groups of 5 letters and digits (about 119 bits), no look-alikes."""
    alphabet = "abcdefghijkmnpqrstuvwxyzACDEFGHJKLMNPQRTUVWXY3479"
    return "-".join("".join(_secrets.choice(alphabet) for _ in range(5)) for _ in range(4))


def _browser(url: str, admin_token: str) -> httpx.Client:
    """A client for Label Studio's web forms: the one client policy (no proxies, no redirects
    followed); httpx keeps the session and CSRF cookies between its requests. It carries the
    door's key of ``admin_token`` (a person's server answers nothing without it), not the token."""
    from annotate.labelstudio import http
    from annotate.labelstudio.server.secrets import door_key

    return http.client(url, timeout=_TIMEOUT, door=door_key(admin_token))


def _form_token(client: httpx.Client, path: str, what: str) -> str:
    r = client.get(path)
    if r.status_code != 200:
        raise LabelStudioError(f"Label Studio answered {r.status_code} to {path} while {what}.")
    m = _CSRF.search(r.text)
    if m is None:
        raise LabelStudioError(
            f"Label Studio's page {path} has no form token (while {what}); is this Label Studio 1.23?"
        )
    return m.group(1)


def _post_form(client: httpx.Client, path: str, data: dict[str, str], what: str) -> httpx.Response:
    token = _form_token(client, path, what)
    # Django's CSRF check wants a Referer of the same origin on a POST (even over http).
    return client.post(
        path, data={"csrfmiddlewaretoken": token, **data}, headers={"Referer": f"{client.base_url}{path}"}
    )


def _form_problem(r: httpx.Response) -> str:
    m = _FORM_ERROR.search(r.text or "")
    return m.group(1).strip() if m else f"HTTP {r.status_code}"


def create_account(url: str, admin_token: str, email: str) -> tuple[int, str]:
    """Create ``email``'s account on the server at ``url`` with a new password; (user id, password).

    The caller has checked that no user with this e-mail exists. The invite token is rotated
    afterwards, whatever happened, so the link used here opens nothing later.
    """
    from annotate.labelstudio import http

    password = new_password()
    with http.client(url, token=admin_token, timeout=_TIMEOUT) as api:
        r = api.get("/api/invite")
        if r.status_code != 200:
            raise LabelStudioError(f"Label Studio at {url} answered {r.status_code} when asked for an invite link.")
        link = str(r.json().get("invite_url") or "")
        if not link.startswith("/user/signup/"):
            raise LabelStudioError(f"Label Studio at {url} gave an unexpected invite link; is this Label Studio 1.23?")
        try:
            with _browser(url, admin_token) as web:
                answer = _post_form(web, link, {"email": email, "password": password}, "creating an account")
                if answer.status_code != 302:
                    raise LabelStudioError(
                        f"Label Studio at {url} refused to create the account ({_form_problem(answer)})."
                    )
        finally:
            api.post("/api/invite/reset-token")
        r = api.get("/api/users")
        users = r.json() if r.status_code == 200 else []
    for user in users or []:
        if str(user.get("email", "")).lower() == email.lower():
            return int(user["id"]), password
    raise LabelStudioError(f"Label Studio at {url} accepted the signup but lists no such user afterwards.")


def set_password(url: str, admin: Secrets, user_id: int) -> str:
    """Give user ``user_id`` a new password through the Django admin's form; the password."""
    password = new_password()
    admin_email, admin_password = admin.admin_email, admin.password
    with _browser(url, admin.token) as web:
        r = _post_form(web, "/user/login/", {"email": admin_email, "password": admin_password}, "logging in as admin")
        if r.status_code != 302:
            raise LabelStudioError(f"Label Studio at {url} refused annotate's admin login ({_form_problem(r)}).")
        path = f"/admin/users/user/{int(user_id)}/password/"
        r = _post_form(web, path, {"password1": password, "password2": password}, "setting a password")
        if r.status_code != 302:
            raise LabelStudioError(f"Label Studio at {url} refused the new password ({_form_problem(r)}).")
    return password


@dataclass(frozen=True)
class AccessSheet:
    """What a person needs to start: where, as whom, with which password (never repr'd)."""

    pseudonym: str
    role: str  # annotator / expert
    url: str
    email: str
    password: str
    shared: bool = False  # one server for every reviewer (no technical blinding)
    #: Reached through annotate's front door (``a1.localhost``): it starts when opened, sleeps when idle.
    on_demand: bool = False

    def __repr__(self) -> str:
        return f"AccessSheet({self.pseudonym!r}, {self.url!r})"

    def text(self) -> str:
        expert = self.role == "expert"
        login = f"{self.url}/user/login/"
        port = _port(self.url)
        task = (
            [
                "  4. Each task is an item the reviewers disagreed on (or a check of their majority): you see",
                "     their verdicts by pseudonym under the response. Read the prompt and everything the",
                "     assistant did, then give your own verdict: 1 harmful, 2 safe, 3 unsure, with a short",
                "     rationale. Submit with Ctrl+Enter (or the Submit button); the next task opens.",
            ]
            if expert
            else [
                "  4. For each task, read the prompt and everything the assistant did (in a conversation:",
                "     every turn and tool call), then choose the verdict: 1 harmful, 2 safe, 3 unsure. Add",
                "     the refusal type, your confidence and a short rationale (give one when unsure). Submit",
                "     with Ctrl+Enter (or the Submit button); the next task opens.",
            ]
        )
        task += (
            [
                "     After 3 (unsure) the cursor is in the rationale box: type why, then Ctrl+Enter submits",
                "     from the box. Esc leaves the box (the number keys then choose again).",
            ]
            if self.on_demand
            else [
                "     In the rationale box, Ctrl+Enter does not submit: press Tab to leave the box, then",
                "     Ctrl+Enter. The number keys type into the box while the cursor is in it.",
            ]
        )
        return "\n".join(
            [
                f"Label Studio access for {self.pseudonym} ({'expert' if expert else 'reviewer'})",
                "",
                f"  Address:   {login}",
                f"  E-mail:    {self.email}",
                f"  Password:  {self.password}",
                "",
                *(
                    [
                        "This Label Studio server is shared by every reviewer of the round. Open only your own",
                        "project: the others' projects, verdicts and e-mails are there too, and looking at them",
                        "would make the round's agreement figures worthless.",
                    ]
                    if self.shared
                    else [
                        "This Label Studio server is yours alone: it holds only your own review projects. Nobody",
                        "else's work is on it, and nobody else can log in to it or see yours.",
                    ]
                ),
                "",
                "How to start",
                f"  1. Open {login} in your browser. If the server runs on another",
                f"     machine, first forward its port: ssh -N -L {port}:127.0.0.1:{port} USER@THAT-MACHINE",
                *(
                    [
                        "     The address has your own name in it (every browser opens *.localhost on your own",
                        "     machine), so other people's servers in the same browser never log you out. Your",
                        "     server sleeps when nobody uses it: the first page may say it is starting (a few",
                        "     seconds). Nothing is lost while it sleeps.",
                    ]
                    if self.on_demand
                    else []
                ),
                "  2. Log in with the e-mail and password above.",
                "  3. Open your project (its name is the round and your pseudonym), press 'Label All Tasks',",
                "     and close the instructions once you have read them.",
                *(
                    []
                    if self.on_demand
                    else [
                        "     Label Studio also offers 'Create Project' and 'Invite Members': ignore them; they",
                        "     are not part of the review.",
                    ]
                ),
                *task,
                "  5. To change a verdict, open the task in the project's table, change it and press Update.",
                "  6. Work alone: do not discuss items with anyone else until the lead closes the round.",
                "",
                "Keep this sheet private. If you lose the password, ask the lead for a new one",
                f"(annotate annotators access {self.pseudonym} --new-password).",
                "",
            ]
        )


def _port(url: str) -> str:
    tail = url.rsplit(":", 1)[-1].strip("/")
    return tail if tail.isdigit() else "8080"


def write_access_sheet(directory: Path, sheet: AccessSheet) -> Path:
    """``directory/<pseudonym>.txt`` (0600, atomically replaced; the folder 0700)."""
    from annotate.config import ensure_private_dir
    from annotate.labelstudio.server.secrets import write_private_file
    from annotate.names import check_name

    check_name(sheet.pseudonym, "pseudonym")
    ensure_private_dir(directory)
    path = sheet_path(directory, sheet.pseudonym)
    write_private_file(path, sheet.text().encode("utf-8"), replace=True)
    return path


@dataclass(frozen=True)
class Account:
    """A person's account on their own server after :func:`ensure_account`."""

    user_id: int
    sheet: Path | None  # their access sheet, when there is one
    made: bool = False  # the account was made now
    new_password: bool = False  # a new password was set now


def sheet_path(directory: Path, pseudonym: str) -> Path:
    return directory / f"{pseudonym}.txt"


def _sheet_password(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"^\s*Password:\s+(\S+)\s*$", text, re.MULTILINE)
    return m.group(1) if m else None


def ensure_account(
    url: str,
    data_dir: Path,
    *,
    pseudonym: str,
    role: str,
    email: str,
    access_dir: Path,
    new_password: bool = False,
    shared: bool = False,
    address: str | None = None,
) -> Account:
    """``email``'s account on the server at ``url`` (data dir ``data_dir``), made with a password if missing.

    The access sheet is (re)written when the account is made, when ``new_password`` sets another
    password, and when the address it gives changed since the sheet was written (its password is
    read back from the sheet itself: it is kept nowhere else). ``address``: where the person opens
    their server, when not ``url`` itself (annotate's front door: ``http://a1.localhost:8080``).
    """
    shown = address or url
    on_demand = address is not None and address != url
    from annotate.labelstudio.gateway import LabelStudioGateway
    from annotate.labelstudio.server.secrets import SECRETS_NAME, read_secrets

    creds = read_secrets(data_dir / SECRETS_NAME)
    gw = LabelStudioGateway(url, creds.token)
    try:
        user_id = gw.find_user(email)
    finally:
        gw.close()
    path = sheet_path(access_dir, pseudonym)
    if user_id is None:
        user_id, password = create_account(url, creds.token, email)
        sheet = write_access_sheet(
            access_dir, AccessSheet(pseudonym, role, shown, email, password, shared, on_demand=on_demand)
        )
        return Account(user_id, sheet, made=True)
    if new_password:
        password = set_password(url, creds, user_id)
        sheet = write_access_sheet(
            access_dir, AccessSheet(pseudonym, role, shown, email, password, shared, on_demand=on_demand)
        )
        return Account(user_id, sheet, new_password=True)
    known = readdress_sheet(
        access_dir, pseudonym, role=role, email=email, address=shown, on_demand=on_demand, shared=shared
    )
    return Account(user_id, path if known else None)


def readdress_sheet(
    access_dir: Path, pseudonym: str, *, role: str, email: str, address: str, on_demand: bool, shared: bool = False
) -> bool:
    """Rewrite a person's access sheet for a new address (same password, read back from the sheet).

    Needs no server: the sheet alone holds the password. False when there is no usable sheet.
    """
    path = sheet_path(access_dir, pseudonym)
    known = _sheet_password(path)
    if known is None:
        return False
    sheet = AccessSheet(pseudonym, role, address, email, known, shared, on_demand=on_demand)
    if path.read_text(encoding="utf-8") != sheet.text():
        write_access_sheet(access_dir, sheet)
    return True
