"""Shared by the Triton suites (test_backend.py, test_plan_set.py): after a case fails, the models it
loaded are unloaded.

A case unloads its models at its end; one that fails before then leaves them loaded, and with them
what they hold, such as a device's split, so every later case that splits that GPU would be refused
("GPU 0 is already split") and fail for the first one's sake: S55's run on the H100 lost three cases
that way. After a failed case, each model directory the case made in the module's repository is
unloaded (errors ignored: the failure itself is what the report shows)."""

import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.trtet_failed = True


@pytest.fixture(autouse=True)
def unload_what_a_failed_case_loaded(request):
    if "server" not in request.fixturenames or "repo" not in request.fixturenames:
        yield
        return
    repo = request.getfixturevalue("repo")
    before = set(os.listdir(repo))
    yield
    if not getattr(request.node, "trtet_failed", False):
        return
    server = request.getfixturevalue("server")
    for name in sorted(set(os.listdir(repo)) - before):
        if not os.path.isdir(os.path.join(repo, name)):
            continue
        try:
            server.unload(name)
        except Exception:
            try:
                server.client.unload_model(name)
            except Exception:
                pass
