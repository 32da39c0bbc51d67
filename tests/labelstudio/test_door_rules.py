"""The door's one reading of a request and its allow-list (annotate.labelstudio.server.door_rules), pure.

The routes the labelling page uses were traced through the door during the browser tests
(``ANNOTATE_DOOR_TRACE``, Label Studio 1.23.2); each must pass, and every other spelling of a
refused action must not (the same attacks run against a real door in test_door_attacks.py).
"""

from __future__ import annotations

import pytest

from annotate.labelstudio.server.door_rules import MAX_BODY, Route, framing_problem, refusal, route_of

#: What the labelling page, the login and the Data Manager did in the browser tests (ids made concrete).
TRACED = [
    ("GET", "/"), ("GET", "/user/login/"), ("POST", "/user/login/?next=/projects/"), ("GET", "/projects/"),
    ("GET", "/projects/3/data?tab=4&task=7"), ("GET", "/user/logout/"),
    ("GET", "/static/images/favicon.2a1b.ico"), ("GET", "/static/fonts/Figtree-Regular.ttf"),
    ("GET", "/react-app/main.js?v=1"), ("GET", "/react-app/312.js"), ("GET", "/favicon.ico"), ("GET", "/sw.js"),
    ("GET", "/heidi-tips"), ("GET", "/health/"), ("GET", "/__annotate/keys.js"),
    ("GET", "/api/current-user/whoami"), ("GET", "/api/current-user/token"), ("GET", "/api/version"),
    ("GET", "/api/label_links?expand=true&project=3"), ("GET", "/api/projects?page_size=30"),
    ("GET", "/api/projects/3"), ("GET", "/api/projects/3/label-stream-history?project=3"),
    ("GET", "/api/projects/3/export?exportType=JSON"), ("GET", "/api/users?project=3"), ("GET", "/api/ml?project=3"),
    ("GET", "/api/tasks?page=1&page_size=30&project=3&view=4"), ("GET", "/api/tasks/7?project=3"),
    ("GET", "/api/dm/views?project=3"), ("GET", "/api/dm/project?project=3&interaction=timer"),
    ("GET", "/api/dm/columns?project=3"), ("GET", "/api/organizations/1/memberships"),
    ("POST", "/api/dm/actions?id=next_task&project=3&tabID=4"), ("POST", "/api/dm/views?project=3&tabID=4"),
    ("POST", "/api/tasks/7/annotations?project=3"), ("PATCH", "/api/annotations/9?project=3&taskID=7"),
    ("POST", "/api/tasks/7/drafts"), ("PATCH", "/api/drafts/2"),
]  # fmt: skip

REFUSED = [
    ("POST", "/api/%70rojects/"), ("POST", "/api/projects%2F"), ("POST", "/api/projects"),
    ("PATCH", "/api/projects/%31/"), ("DELETE", "/api/projects/%33/"), ("PUT", "/api/projects/1"),
    ("GET", "/api/%69nvite"), ("POST", "/user/%73ignup/?token=x"), ("POST", "/user/signup/"),
    ("POST", "/api/dm/actions?id=delete%5Ftasks"), ("POST", "/api/dm/actions?id=next_task&id=delete_tasks"),
    ("POST", "/api/dm/actions"), ("DELETE", "/api/tasks/1/"), ("DELETE", "/api/projects/1/tasks/"),
    ("POST", "/api/projects/1/import"), ("POST", "/api/tasks/"), ("POST", "/api/projects/1/validate/"),
    ("PATCH", "/API/projects/1/"), ("POST", "/api/current-user/reset-token/"), ("POST", "/api/invite/reset-token"),
    ("PATCH", "/api/users/1/"), ("POST", "/api/projects/1/duplicate/"), ("GET", "/data/upload/1/x.png"),
    ("POST", "/api/import/file-upload/1"), ("DELETE", "/api/projects/1%2F"), ("GET", "/api/storages/localfiles/"),
]  # fmt: skip

MALFORMED = ["/api/%2570rojects/", "/api//projects/", "/api/projects/./", "/api/x/../projects/", "/api\\projects/",
             "/api/projects/%00/", "/api/%zz/", "http://a1.localhost/api/projects/", "*", "/api/%C0%AF/"]  # fmt: skip


@pytest.mark.parametrize("method, target", TRACED)
def test_what_the_labelling_page_does_passes(method, target):
    route = route_of(target)
    assert isinstance(route, Route), route
    assert refusal(method, route) is None, (method, target)


@pytest.mark.parametrize("method, target", REFUSED)
def test_every_other_spelling_of_an_action_is_refused(method, target):
    route = route_of(target)
    assert isinstance(route, str) or refusal(method, route) is not None, (method, target)


@pytest.mark.parametrize("target", MALFORMED)
def test_a_path_django_would_read_otherwise_is_refused_before_routing(target):
    assert isinstance(route_of(target), str), target


def test_the_page_writes_nothing_it_does_not_need():
    # the reads of what it may write are allowed, the writes of anything else are not
    for method in ("POST", "PATCH", "PUT", "DELETE"):
        assert refusal(method, route_of("/api/projects/3/")) is not None  # type: ignore[arg-type]
        assert refusal(method, route_of("/api/tasks/7/")) is not None  # type: ignore[arg-type]
    assert refusal("DELETE", route_of("/api/annotations/9/")) is None  # type: ignore[arg-type]  # retracting one's vote


def test_framing_is_one_plain_length_or_none():
    host = ["a1.localhost:8080"]
    assert framing_problem(host, [], []) is None and framing_problem(host, ["0"], []) is None
    for lengths in (["1", "1"], ["-1"], ["abc"], ["+5"], ["1e3"], [" "], ["0x10"], ["12345678901"]):
        assert framing_problem(host, lengths, []) is not None, lengths
    assert framing_problem(host, [str(MAX_BODY + 1)], [])[0] == 413  # type: ignore[index]
    assert framing_problem(host, [], ["chunked"])[0] == 411  # type: ignore[index]
    assert framing_problem(host, ["5"], ["identity"]) is not None
    assert framing_problem([], ["5"], []) is not None and framing_problem(host * 2, [], []) is not None
