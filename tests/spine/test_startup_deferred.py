"""Start-up: what a command defers until it is used, asserted on `sys.modules` (never on time).

- The forge's library (`forge.library`, with its policy compiler
  `forge.policy.compile`) is imported when a personal tool is saved, shown,
  called or a draft is read or written (`bridge.personal_tools`), not when a
  roost is built: `roost send` of a command imports neither.
- The decoders' strict reply models (`bridge.senses.decode_reply`, pydantic
  models) are built when a decoder first starts, not with the roost.
- The screens' rule modules (`bridge.screening.secret_context`, `injection`,
  `secret_rules`, `secret_speech`) are imported by the first screening
  (`bridge.screening.screen`) or by `bridge.screening.prepare` (a daemon, a chat),
  and the import formats (`bridge.recall.formats`) by the first date shown.
- `roost recall` imports neither the composition root (`bridge.app.build`)
  nor `bridge.cli.recall_answer`, which only `roost recall-eval --answer` runs.
- `roost doctor` of an OpenAI-compatible model imports no Anthropic backend
  (`bridge.llm.anthropic`: its constants are read only for an Anthropic check).
- `roost vault` imports neither the prompt (`bridge.prompt.source`) nor the
  memory notes (`bridge.app.memory_notes`) nor the scheduler: `roost prompt`'s.
- `roost style sweep` (the roost-style timer's command) and `roost grade --judge`
  build a model backend (`bridge.app.models.make_backend`) without importing the
  composition root (`bridge.app.build`, the sandbox runner, the capabilities).
- `python -m forge lint` imports neither asyncio nor the sandbox runner.

Each case also checks the command's answer, so a deferral that broke it would show.
The figures are in bench/startup.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import python_c
from tests.spine.import_probe import imported_by
from tests.spine.test_terminal_startup import environment

FORGE = ("forge.library", "forge.policy.compile", "forge.calls")
DECODER_REPLY = "bridge.senses.decode_reply"
SCREEN_RULES = tuple(
    f"bridge.screening.{m}"
    for m in ("secret_context", "injection", "secret_rules", "secret_speech")
)


def test_send_builds_a_roost_without_the_forge_library_or_the_decoder_models(home: Path) -> None:
    code, out, modules = imported_by(["send", "/memory list"], environment(home))
    assert code == 0 and "Memory is empty" in out, out
    assert "bridge.app.build" in modules  # a roost was built: the deferral is what is tested
    assert "bridge.personal_tools.source" in modules and "bridge.senses.decoders" in modules
    assert "bridge.screening.screen" in modules and "bridge.recall.service" in modules
    deferred = (*FORGE, DECODER_REPLY, *SCREEN_RULES, "bridge.recall.formats")
    assert [m for m in deferred if m in modules] == []


def test_a_memory_save_still_screens_with_the_rules(home: Path) -> None:
    """The first screening imports the rules and refuses a credential as before (the
    same line as with the rules imported at start; exit 1: nothing was saved)."""
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6"
    code, out, modules = imported_by(["send", f"/remember my key is {key}"], environment(home))
    assert code == 1 and "Not saved" in out and key not in out, out
    assert set(SCREEN_RULES) <= modules


def test_a_tool_command_still_imports_the_forge_library(home: Path) -> None:
    """`/tool show` of a tool nobody saved looks it up in the library: imported then
    (a usage error: exit 1, as before the deferral)."""
    code, out, modules = imported_by(["send", "/tool show me.nothing"], environment(home))
    assert code == 1 and "There is no personal tool me.nothing" in out, out
    assert "forge.library" in modules


def test_recall_imports_no_composition_root(home: Path) -> None:
    env = environment(home)
    assert imported_by(["send", "/help"], env)[0] == 0  # the local tenant's folders made
    code, out, modules = imported_by(["recall", "--tenant", "local", "hello"], env)
    assert code == 1 and out == "", out  # nothing indexed yet (said on stderr)
    assert "bridge.recall.service" in modules
    loaded = {"bridge.app.build", "bridge.app.roost", "bridge.cli.recall_answer"} & modules
    assert loaded == set()


def test_vault_list_imports_no_prompt(home: Path) -> None:
    env = environment(home)
    code, out, modules = imported_by(["vault", "list", "local"], env)
    assert code == 0, out
    assert "bridge.loadout.vault" in modules
    deferred = ("bridge.prompt.source", "bridge.app.memory_notes", "bridge.schedule.service")
    assert [m for m in deferred if m in modules] == []


def test_doctor_of_an_openai_compatible_model_imports_no_anthropic_backend(home: Path) -> None:
    code, out, modules = imported_by(["doctor"], environment(home))
    assert code == 1 and "unreachable" in out, out  # nobody listens on the model's port
    assert "aiohttp" in modules and "bridge.llm.anthropic" not in modules


COMPOSITION_ROOT = ("bridge.app.build", "bridge.app.wiring", "bridge.app.roost", "forge.runner")


def test_style_sweep_builds_its_judge_without_the_composition_root(home: Path) -> None:
    env = environment(home)
    for args in (["style", "sweep", "--dry-run"], ["style", "sweep"]):
        code, out, modules = imported_by(args, env)
        assert code == 0 and "0 tenants: 0 candidates" in out, out
        assert "bridge.app.models" in modules and "bridge.style.judge" in modules
        assert [m for m in COMPOSITION_ROOT if m in modules] == []


def test_grade_judge_without_a_model_refuses_without_the_composition_root(
    home: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in environment(home).items() if not k.startswith("ROOST_LLM__")}
    cases = tmp_path / "cases.jsonl"
    cases.write_text("")
    code, out, modules = imported_by(["grade", "--eval", str(cases), "--judge"], env)
    assert code == 78 and out == "", out  # the offline backend: refused, said on stderr
    assert "bridge.app.models" in modules
    assert [m for m in COMPOSITION_ROOT if m in modules] == []


# `python -m forge ...` with the probe's report of sys.modules at exit
FORGE_PROBE = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.__stderr__.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["forge", *sys.argv[1:]]
runpy.run_module("forge", run_name="__main__")
"""


def test_forge_lint_imports_no_runner(tmp_path: Path) -> None:
    tool = tmp_path / "tool.py"
    tool.write_text("import os\n\ndef run():\n    return os.getcwd()\n")
    done = python_c(FORGE_PROBE, "lint", str(tool), check=False)
    [line] = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")]
    modules = set(json.loads(line.removeprefix("MODULES ")))
    assert done.returncode == 1 and f"{tool}:" in done.stdout, done.stdout  # findings: os
    assert "forge.lint" in modules
    assert [m for m in ("asyncio", "forge.runner") if m in modules] == []


def test_forge_capabilities_still_asks_a_sandbox_helper() -> None:
    done = python_c(FORGE_PROBE, "capabilities", check=False)
    assert done.returncode == 0, done.stderr[-500:]
    caps = json.loads(done.stdout)
    assert {"landlock", "seccomp", "rlimit_nproc", "drop_capabilities"} <= set(caps)
    assert all(isinstance(c, dict) and "available" in c for c in caps.values())
    [line] = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")]
    assert "forge.runner" in set(json.loads(line.removeprefix("MODULES ")))
