"""Documents from Telegram: a PDF's text reaches the model and the file stays in the
workspace; a saved tool works on an uploaded CSV in the real sandbox; a tool's output
file comes back as a photo or a document; another tenant cannot reach the file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fakes.fake_openai import Call, Response, Text, ToolCalls, last_user_text
from tests.senses.conftest import BOB, senses_running
from tests.senses.samples import make_pdf, make_png
from tests.telegram.conftest import ALICE

CSV_TOTALS = '''
import csv

def run(path: str) -> dict:
    """Sum the amount column of a CSV file."""
    total = 0.0
    rows = 0
    with open(path) as fh:
        for row in csv.DictReader(fh, delimiter=";"):
            total += float(row["amount"])
            rows += 1
    return {"rows": rows, "total": round(total, 2)}
'''
CHART = '''
import os

def run(name: str) -> str:
    """Write a small PNG chart into outputs/."""
    os.makedirs("outputs", exist_ok=True)
    with open("outputs/" + name, "wb") as fh:
        fh.write(bytes.fromhex(DATA))
    return "written outputs/" + name
'''


def inbox_path(body: dict[str, Any]) -> str:
    found = re.search(r"workspace at (inbox/[0-9a-f]{16}\.\w+)", last_user_text(body))
    assert found is not None
    return found.group(1)


def tool_result(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


async def test_a_pdf_reaches_the_model_and_stays_in_the_workspace(home: Path) -> None:
    pages = [f"Invoice page {n}\nTotal due: {n * 100} EUR" for n in range(1, 4)]
    pdf = make_pdf(pages)
    async with senses_running(home) as run:
        run.model.script(Text("The invoice is due: 600 EUR in all."))
        run.fake.files.push_document(ALICE, pdf, "invoice.pdf", "application/pdf", caption="sum?")
        await run.wait_text(ALICE, "600 EUR in all")
        asked = last_user_text(run.model.requests[-1])
        assert asked.startswith('[file "invoice.pdf" (PDF, 3 pages); the whole file is in')
        assert "Total due: 300 EUR" in asked and asked.endswith("\n\nsum?")
        kept = run.roost.tenant_dirs("alice").workspace / inbox_path(run.model.requests[-1])
        assert kept.read_bytes() == pdf and kept.stat().st_mode & 0o777 == 0o600
        assert "invoice" not in kept.name  # a generated name, never the sender's


async def test_a_long_document_is_cut_visibly(home: Path) -> None:
    text = "".join(f"line {n:05d} of the notes\n" for n in range(2000))
    async with senses_running(home, limits={"document_chars": 1000}) as run:
        run.model.script(Text("Read it."))
        run.fake.files.push_document(ALICE, text.encode(), "notes.md", "text/markdown")
        reply = await run.wait_text(ALICE, "Read it.")
        assert reply.startswith("📎 notes.md is long: I read the first 1,000 of")
        asked = last_user_text(run.model.requests[-1])
        where = inbox_path(run.model.requests[-1])
        more = len(text.strip()) - 1000
        cut = f"… [cut: {more:,} more characters; the whole file is in your workspace at {where}]"
        assert cut in asked


async def test_a_saved_tool_sums_an_uploaded_csv_in_the_sandbox(home: Path) -> None:
    rows = "item;amount\ntea;3.50\ncake;4.25\nbread;2.10\n"
    create = {"name": "csv_totals", "description": "Sum a CSV", "source": CSV_TOTALS}
    async with senses_running(home) as run:
        run.model.script(ToolCalls([Call("forge_create", create)]), Text("Wrote csv_totals."))
        run.fake.push_text(ALICE, "write me a CSV summing tool")
        await run.wait_text(ALICE, "Wrote csv_totals.")
        run.fake.push_text(ALICE, "/tool save csv_totals")
        await run.wait_text(ALICE, "Keep draft csv_totals v1")
        run.fake.push_text(ALICE, "/tool save csv_totals yes")
        await run.wait_text(ALICE, "Saved me.csv_totals")

        def model(body: dict[str, Any]) -> Response:
            if body["messages"][-1]["role"] == "tool":
                return Text("Totals: " + tool_result(body))
            return ToolCalls([Call("me__csv_totals", {"path": inbox_path(body)})])

        run.model.responder = model
        run.fake.files.push_document(ALICE, rows.encode(), "spend.csv", "text/csv")
        reply = await run.wait_text(ALICE, "Totals:")
        assert json.loads(reply.removeprefix("Totals: ")) == {"rows": 3, "total": 9.85}
        asked = last_user_text(run.model.requests[-2])
        assert 'CSV, 4 rows, 2 columns, separated by ";"' in asked


async def test_a_tools_output_file_comes_back_as_a_photo_and_a_document(home: Path) -> None:
    png = make_png(300, 200)
    source = CHART.replace("bytes.fromhex(DATA)", f"bytes.fromhex({png.hex()!r})")
    create = {"name": "chart", "description": "Draw a chart", "source": source}
    async with senses_running(home) as run:
        run.model.script(
            ToolCalls([Call("forge_create", create)]),
            ToolCalls([Call("draft__chart", {"name": "chart.png"})]),
            ToolCalls([Call("draft__chart", {"name": "data.csv"})]),
            Text("Here is your chart."),
        )
        run.fake.push_text(ALICE, "draw me a chart")
        await run.wait_text(ALICE, "Here is your chart.")
        await run.fake.wait_until(lambda: len(run.fake.documents_to(ALICE)) == 1)
        photos = [p for p in run.fake.files.photos if p.chat_id == ALICE]
        assert [(p.upload.data, p.width, p.height) for p in photos] == [(png, 300, 200)]
        assert run.fake.documents_to(ALICE)[0].upload.filename == "data.csv"

        run.model.script(Text("Nothing new."))
        run.fake.push_text(ALICE, "thanks")
        await run.wait_text(ALICE, "Nothing new.")
        assert len(run.fake.files.photos) == 1 and len(run.fake.documents) == 1  # not again


async def test_a_new_persons_tool_writes_into_outputs_without_making_it(home: Path) -> None:
    """README: a tool that writes into `outputs/` hands the file back. A new person's
    workspace had no `outputs/`, so the plain `open("outputs/...", "w")` failed with
    FileNotFoundError (newcomer37 F7)."""
    source = """
def run(name: str) -> str:
    \"\"\"Write a small report into outputs/.\"\"\"
    with open("outputs/" + name, "w") as fh:
        fh.write("total: 3\\n")
    return "written outputs/" + name
"""
    create = {"name": "report", "description": "Write a report", "source": source}
    async with senses_running(home) as run:
        run.model.script(
            ToolCalls([Call("forge_create", create)]),
            ToolCalls([Call("draft__report", {"name": "report.txt"})]),
            Text("Here is your report."),
        )
        run.fake.push_text(ALICE, "write me a report")
        await run.wait_text(ALICE, "Here is your report.")
        assert tool_result(run.model.requests[-1]) == '"written outputs/report.txt"'
        await run.fake.wait_until(lambda: len(run.fake.documents_to(ALICE)) == 1)
        sent = run.fake.documents_to(ALICE)[0].upload
        assert (sent.filename, sent.data) == ("report.txt", b"total: 3\n")


async def test_another_tenant_cannot_reach_the_file(home: Path) -> None:
    async with senses_running(home) as run:
        run.model.script(Text("Got it."))
        run.fake.files.push_document(ALICE, b"alice's secret plan\n", "plan.txt", "text/plain")
        await run.wait_text(ALICE, "Got it.")
        where = inbox_path(run.model.requests[-1])
        # Bob's draft tool asks for Alice's path: it resolves inside Bob's own workspace
        reader = '''
def run(path: str) -> str:
    """Read a file."""
    with open(path) as fh:
        return fh.read()
'''
        create = {"name": "peek", "description": "Read a file", "source": reader}
        run.model.script(
            ToolCalls([Call("forge_create", create)]),
            ToolCalls([Call("draft__peek", {"path": where})]),
            ToolCalls([Call("draft__peek", {"path": f"../../../alice/global/workspace/{where}"})]),
        )

        def echo(body: dict[str, Any]) -> Response:
            return Text("Bob got: " + tool_result(body))

        run.model.responder = echo
        run.fake.push_text(BOB, "peek please")
        await run.wait_text(BOB, "Bob got:")
        results = [m["content"] for m in run.model.requests[-1]["messages"] if m["role"] == "tool"]
        assert len(results) == 3
        assert all("secret plan" not in r for r in results)
        assert not (run.roost.tenant_dirs("bob").workspace / where).exists()
