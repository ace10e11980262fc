"""What the explorer's server and its sessions let through (issue 35): the token stays off every
command line, the server serves nothing without it, and a session, an upload or a link cannot
make the page's kernel read a file outside the workspace, carry unknown names or control
characters, stall it with megabytes of text, or cut a bound's digits."""

import json
import os
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from conftest import stop_group

from workbench.errors import InputError
from workbench.lab import explorer as explore
from workbench.lab.explorer import ExplorerState, load_state, parse_state, save_state

TOKEN = "secret-token-" + "x" * 24


def _widgets():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    return Explorer


@pytest.fixture(scope="module")
def a71_explorer():
    return _widgets()("a71", "uc1")


# --- 1. the token ---------------------------------------------------------------------------

def test_the_command_line_holds_no_token(tmp_path):
    from workbench.cli.explore import explore_command

    cmd, env = explore_command(port=8866, profile="a71", use_case="uc1", token=TOKEN)
    assert not any(TOKEN in a for a in cmd)  # /proc/PID/cmdline is world-readable
    # Handed over where only this user can read it (/proc/PID/environ is 0400).
    assert TOKEN in env.values()


def test_the_cli_prints_the_token_but_keeps_it_off_the_command_line(monkeypatch, capsys):
    from workbench.cli import main

    seen = {}
    monkeypatch.setattr("os.execve", lambda cmd, argv, env: seen.update(argv=argv, env=env))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    assert main(["explore", "--profile", "a71"]) == 0
    token = capsys.readouterr().out.split("?token=", 1)[1].split()[0]
    assert len(token) >= 24 and not any(token in a for a in seen["argv"])
    assert token in seen["env"].values()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={"Host": f"localhost:{port}"})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.timeout(120)
def test_the_real_server_wants_the_token_that_no_command_line_shows():
    """Voila started as `workbench explore` starts it (a few seconds): nothing on any process's
    command line holds the token, and nothing is served without it."""
    pytest.importorskip("voila")
    from workbench.cli.explore import explore_command

    port = _free_port()
    cmd, env = explore_command(port=port, profile="a71", use_case="uc1", token=TOKEN)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # its own group: its kernel goes too
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, "voila exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "voila did not come up"
                time.sleep(0.2)
        assert _get(port, "/") in (302, 403)  # to the login page, not the explorer
        assert _get(port, "/api/kernels/00000000-0000-0000-0000-000000000000") == 403
        # Images under the served folder were handed to anyone who asked, token or not.
        assert _get(port, "/voila/files/reports/explorer/explorer.png") == 403
        assert _get(port, "/?token=" + TOKEN) == 200
        leaked = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if TOKEN.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    leaked.append(pid)
            except OSError:
                continue
        assert leaked == []
    finally:
        stop_group(proc)


# --- 2. a session reads only what lies inside the workspace -----------------------------------

def test_a_session_cannot_name_a_file_outside_the_workspace(tmp_path):
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    for name in ("/etc/passwd", str(outside), "../../../../../../etc/passwd"):
        with pytest.raises(InputError, match="outside the workspace") as e:
            explore.session_profile(name)
        assert e.value.where == "profile"


def test_a_symlink_into_the_workspace_is_followed_before_the_check(tmp_path, workspace_home):
    outside = tmp_path / "secret.json"
    outside.write_text('{"device": {}}')
    link = workspace_home / "profiles" / "innocent.json"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    try:
        for name in ("innocent", str(link)):
            with pytest.raises(InputError, match="outside the workspace"):
                explore.session_profile(name)
    finally:
        link.unlink()


def test_names_and_files_inside_the_workspace_are_fine(workspace_home):
    from workbench.profiles import resolve_profile

    assert explore.session_profile("a71") == resolve_profile("a71").resolve()
    mine = workspace_home / "mine" / "phone.json"
    mine.parent.mkdir(exist_ok=True)
    mine.write_bytes(resolve_profile("a71").read_bytes())
    assert explore.session_profile(str(mine)) == mine.resolve()
    # The profile the explorer was opened with is trusted wherever it lies.
    assert explore.session_profile("/etc/passwd", trusted=["/etc/passwd"]) == Path("/etc/passwd")
    with pytest.raises(InputError, match="no profile named"):
        explore.session_profile("nonesuch")


def test_links_uploads_and_session_files_cannot_read_etc_passwd(a71_explorer, tmp_path):
    ex = a71_explorer
    before = ex.last.design_label("d0")
    query = urllib.parse.urlencode({"profile": "/etc/passwd", "slo": "max A"})
    assert ex.apply_query(query) is None
    assert ex.failed and "outside the workspace" in ex.w_status.value
    assert "profile" in ex.w_status.value
    ex._on_upload({"new": [{"name": "s.json",
                            "content": b'{"profile": "/etc/passwd", "slo": "max A"}'}]})
    assert ex.failed and "outside the workspace" in ex.w_status.value
    bad = tmp_path / "s.json"
    bad.write_text('{"profile": "/etc/passwd", "slo": "max A"}')
    with pytest.raises(InputError, match="outside the workspace"):
        ex.load(bad)
    assert ex.w_profile.value == "a71" and ex.w_profile.value != "/etc/passwd"
    ex.apply_query(ex.session_state().to_query())  # back to a good view
    assert not ex.failed and ex.last.design_label("d0") == before


def test_a_session_opens_headless_with_the_same_checks(tmp_path):
    """`load_state` + `session_of`: what the page does with a file, without a page."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"profile": "/etc/passwd", "slo": "max A"}))
    with pytest.raises(InputError, match="outside the workspace") as e:
        explore.session_of(load_state(path), file=path)
    assert e.value.where == "profile" and "s.json" in str(e.value)
    good = {"profile": "a71", "use_case": "uc1", "slo": "max A; max TP; max L <= 41.67ms"}
    assert explore.session_of(ExplorerState(**good)).base.task_names == ["uc1"]
    for field, value, where in (("use_case", "uc9", "use_case"), ("slo", "max A; max Q", "slo"),
                                ("bounds", [1.0, 2.0], "bounds"), ("flags", {"TPU": True},
                                                                    "flags"),
                                # the sliders end at 5: 7 would reopen as 5
                                ("weights", [7.0, 1.0], "weights[0]"),
                                ("weights", [0.0, 0.0], "weights"),
                                ("enabled", [False, False], "enabled")):
        with pytest.raises(InputError) as e:
            explore.session_of(ExplorerState(**{**good, field: value}))
        assert e.value.where == where


# --- 3. sessions are validated like profiles --------------------------------------------------

@pytest.mark.parametrize("field,value,where", [
    ("use_case", "uc9", "use_case"),
    ("tasks", ["nonesuch"], "tasks[0]"),
    ("x", "max Q", "x"),
    ("y", "bogus", "y"),
])
def test_unknown_names_in_a_session_are_refused_with_the_field_named(a71_explorer, field, value,
                                                                     where):
    ex = a71_explorer
    state = ExplorerState(**{"profile": "a71", "use_case": "uc1",
                             "slo": "max A; max TP; max L <= 41.67ms", field: value})
    with pytest.raises(InputError) as e:
        ex.apply_state(state)
    assert e.value.where == where
    assert ex.w_scenario.value == "uc1" and not ex.failed


@pytest.mark.parametrize("field,value", [
    ("use_case", "uc1\x1b[2J"), ("tasks", ["uc1", "a\nb"]), ("x", "A\x07"), ("y", "\u202eA"),
    ("flags", {"CPU\x1b]8;;": True}), ("profile", "a71\x00"),
])
def test_control_characters_in_a_session_are_refused(field, value):
    data = {"profile": "a71", "slo": "max A", field: value}
    with pytest.raises(InputError, match="control characters") as e:
        parse_state(json.dumps(data), file="s.json")
    assert field in str(e.value)
    # The same in a link (lists and flags comma-separated).
    query = {k: v if isinstance(v, str) else ",".join(v) for k, v in data.items()}
    with pytest.raises(InputError, match="control characters"):
        ExplorerState.from_query(urllib.parse.urlencode(query))


# --- 4. no expensive work before the limits ---------------------------------------------------

def test_a_huge_query_string_or_session_is_refused_naming_the_limit(tmp_path):
    big = "max A; " * 20_000  # 140 kB
    query = urllib.parse.urlencode({"profile": "a71", "slo": big})
    with pytest.raises(InputError, match=str(explore.MAX_SESSION)) as e:
        ExplorerState.from_query(query)
    assert "URL" in str(e.value)
    text = '{"profile": "a71", "slo": "' + big + '"}'
    with pytest.raises(InputError, match=str(explore.MAX_SESSION)):
        parse_state(text, file="big.json")
    path = tmp_path / "big.json"
    path.write_text(text)
    with pytest.raises(InputError, match=str(explore.MAX_SESSION)) as e:
        load_state(path)
    assert "big.json" in str(e.value)


def test_a_long_slo_is_refused_before_it_is_parsed(a71_explorer, monkeypatch):
    ex = a71_explorer
    limit = explore.MAX_SLO
    with pytest.raises(ValueError, match=f"at most {limit} characters"):
        ExplorerState(profile="a71", slo="max A; " * limit)

    def no_parse(*a, **k):
        raise AssertionError("a too-long SLO reached the parser")

    monkeypatch.setattr("workbench.lab.explorer.session.DiscreteProblem", no_parse)
    ex.w_slo.value = "max A; " * 150_000  # 1 MB
    assert ex.failed and f"at most {limit} characters" in ex.w_status.value
    monkeypatch.undo()
    ex.w_slo.value = "max A; max TP; max L <= 41.67ms"
    assert not ex.failed


def test_a_huge_upload_is_refused_before_it_is_decoded(a71_explorer):
    ex = a71_explorer
    ex._on_upload({"new": [{"name": "big.json", "content": b" " * (explore.MAX_SESSION + 1)}]})
    assert ex.failed and str(explore.MAX_SESSION) in ex.w_status.value
    assert ex.update() is not None and not ex.failed  # the view it had is still there


# --- 5. a bound keeps its digits ----------------------------------------------------------------

def test_a_bound_keeps_every_digit_in_the_link_and_the_file(tmp_path):
    state = ExplorerState(profile="a71", use_case="uc1", slo="max A; max TP; max L <= 41.67ms",
                          weights=[1.2345678901], bounds=[41.6666667])
    assert ExplorerState.from_query(state.to_query()) == state
    save_state(state, tmp_path / "s.json")
    assert load_state(tmp_path / "s.json") == state


def test_the_explorer_reopens_a_bound_with_every_digit(tmp_path):
    Explorer = _widgets()
    ex = Explorer("a71", "uc1")
    ex.w_bounds[0].value = 41.6666667
    assert ex.session_state().bounds == [41.6666667]
    other = Explorer("a71", "uc2")
    other.apply_query(ex.view_query())
    assert other.w_bounds[0].value == 41.6666667
    other.load(ex.save(tmp_path / "view.json"))
    assert other.w_bounds[0].value == 41.6666667
    assert other.session_state() == ex.session_state()
