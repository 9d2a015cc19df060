"""The Markdown report keeps hostile text inert: a finding's title, summary, evidence, remediation and docs, and the
timeline, can neither add a heading, a table row, a code block, raw HTML or a link, nor break the report's own."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from markdown_it import MarkdownIt
from markdown_it.token import Token

from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, Finding, Problem, Ref, Remediation, Severity, TimelineEntry
from argo_doctor.report.markdown import render
from argo_doctor.snapshot import Snapshot

MESSAGE = ("rpc error: code = Unknown desc = `helm template .` failed\n## Sync succeeded\n```\n"
           "<img src=x onerror=alert(1)> [details](javascript:alert(2)) &lt;b&gt; ~~gone~~ *all* _good_ | x |\n"
           "    indented\n- item\n1. step\n===")
"""A sync error message as Argo CD words it, with what would make Markdown of it."""
START = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)


def hostile_finding() -> Finding:
    """A sync failure whose message, quoted in the title, summary and evidence, carries Markdown and HTML."""
    return Finding(
        rule="sync-failed", severity=Severity.HIGH, title=f"Sync of guestbook failed: {MESSAGE}",
        summary=f"The last sync of argocd/guestbook ended in Failed: {MESSAGE}",
        objects=[Ref("argoproj.io/v1alpha1", "Application", "argocd", "guest`book")],
        evidence=[Evidence("object", "objects/argocd/applications.yaml:12 Application/argocd/guestbook .status",
                           MESSAGE, START),
                  Evidence("log", "logs/argocd/argocd-application-controller-0/controller.log:7", f"msg={MESSAGE}",
                           START + timedelta(seconds=1))],
        remediation=Remediation(text=f"Read the error: {MESSAGE}", command="kubectl get app guestbook\n```\n# done",
                                patch="spec:\n  source:\n    helm: {}\n````", docs=(
                                    "https://argo-cd.readthedocs.io/en/stable/", "javascript:alert(3)",
                                    "https://example.com/a>b")),
        chain=[0, 1],
    )


def markdown() -> str:
    finding = hostile_finding()
    entries = [TimelineEntry(e.time, "application-controller", e.kind, e.location, e.excerpt, (finding.id,))
               for e in finding.evidence if e.time is not None]
    problems = [Problem("objects/broken`|.yaml:3", f"invalid YAML: {MESSAGE}")]
    out = io.StringIO()
    render(ScanResult(Snapshot("hostile-bundle"), [finding], entries, problems), out)
    return out.getvalue()


def tokens(text: str) -> list[Token]:
    """The block tokens and their inline children, every link kept whatever its scheme."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.validateLink = lambda url: True
    found: list[Token] = []
    for token in md.parse(text):
        found.append(token)
        found.extend(token.children or [])
    return found


def shown(inline: Token) -> str:
    """The text an inline token renders to."""
    return "".join(c.content if c.type in ("text", "code_inline") else "\n" if c.type.endswith("break") else ""
                   for c in inline.children or [])


def test_hostile_text_adds_no_structure() -> None:
    text = markdown()
    found = tokens(text)
    headings = [shown(found[i + 1]) for i, t in enumerate(found) if t.type == "heading_open"]
    assert headings == ["argo-doctor report", f"[HIGH] Sync of guestbook failed: {' '.join(MESSAGE.splitlines())}",
                        "Timeline", "Input errors"]
    assert not [t for t in found if t.type in ("html_block", "html_inline", "s_open")]
    assert [found[i + 1].content for i, t in enumerate(found) if t.type == "em_open"] == ["Rule", "id"]
    assert [t.attrs["href"] for t in found if t.type == "link_open"] == ["https://argo-cd.readthedocs.io/en/stable/"]
    fences = [t.content for t in found if t.type == "fence"]
    assert fences == ["kubectl get app guestbook\n```\n# done\n", "spec:\n  source:\n    helm: {}\n````\n"]
    assert [t.type for t in found if t.type in ("table_open", "tr_open")] == ["table_open", "tr_open", "tr_open",
                                                                           "tr_open", "table_open", "tr_open",
                                                                           "tr_open", "tr_open"]
    assert not [t for t in found if t.type == "code_block"]  # no indented line became code


def test_hostile_text_reads_as_it_was_written() -> None:
    """Each text renders to itself (line breaks as spaces where a line must stay one, as hard line breaks in a
    paragraph); a code span holding a backtick is still one code span."""
    found = tokens(markdown())
    paragraphs = [shown(found[i + 1]) for i, t in enumerate(found) if t.type == "paragraph_open"]
    assert f"The last sync of argocd/guestbook ended in Failed: {MESSAGE.replace('    ', '')}" in paragraphs
    cells = [shown(found[i + 1]) for i, t in enumerate(found) if t.type == "td_open"]
    flat = " ".join(MESSAGE.splitlines())
    assert cells.count(flat) == 2 and cells.count(f"msg={flat}") == 2
    codes = [t.content for t in found if t.type == "code_inline"]
    assert "Application/argocd/guest`book" in codes and "objects/broken`|.yaml:3" in codes
    texts = " ".join(t.content for t in found if t.type == "text")
    assert "[details](javascript:alert(2))" in texts and "<img src=x onerror=alert(1)>" in texts
    assert "&lt;b&gt;" in texts and "javascript:alert(3)" in texts
