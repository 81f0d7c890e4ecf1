"""A crew request whose programmer games the suite never ends ``passed`` (issue 38, item 1):
a scripted OpenAI-compatible server on loopback answers every role, the programmer with a
solution that patches pytest's reports, returns an always-equal object, or exits early."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.types import Status
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.sandbox.api import Sandbox

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
GAMED = {
    "patches pytest's reports": (
        "import _pytest.reports as reports\n"
        "_init = reports.TestReport.__init__\n"
        "def _passed(self, *args, **kwargs):\n"
        "    _init(self, *args, **kwargs)\n"
        "    self.outcome, self.longrepr = 'passed', None\n"
        "reports.TestReport.__init__ = _passed\n"
        "def primes_up_to(n):\n    return []\n"
    ),
    "returns an always-equal object": (
        "class Anything:\n"
        "    def __eq__(self, other):\n        return True\n"
        "def primes_up_to(n):\n    return Anything()\n"
    ),
    "exits early": "import os\ndef primes_up_to(n):\n    os._exit(0)\n",
}


@pytest.mark.parametrize("what", list(GAMED))
def test_a_gamed_suite_never_ends_passed(sb: Sandbox, tmp_path: Path, what: str) -> None:
    reply = f"```python\n{GAMED[what]}```"
    script = {
        "programmer": [reply.replace("```python\n", f"```python\n# {n}\n", 1) for n in range(2)]
    }
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        llm = LLMClient(
            base_url=server.base_url,
            api_key="sk-test",
            cache_dir=tmp_path / "llm-cache",
            max_retries=1,
            timeout_s=10,
        )
        out = run_crew(REQUEST, llm=llm, sandbox=sb, options=CrewOptions(max_rounds=2))
    assert out.status is not Status.PASSED, (what, out.status, out.reason)
    assert len(server.requests_for("programmer")) == 2, what  # the crew saw the suite fail
