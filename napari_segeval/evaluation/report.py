"""``report.html``: one self-contained page per results folder (docs/batch.md shows one).

The recipe and counts, the model comparison, the worklist, Dice tables and box plots,
the protocol's own numbers, a sortable per-case table linking each case's saved files
(relative links, so the folder can move as a whole), the worst cases' thumbnails and
the failures. Pictures are inline base64 PNGs and the sorting inline JavaScript: the
file opens anywhere, offline.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from napari_segeval._atomic import atomic_write_text
from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation import _figures as F
from napari_segeval.evaluation import store
from napari_segeval.evaluation._report_sections import (
    Markup,
    dice_groups,
    dice_vs_uncertainty,
    figure,
    fold_tables,
    model_comparison,
    prediction_keys,
    robust_section,
    rounds_section,
    table,
    worklist_section,
)
from napari_segeval.evaluation.curves import round_rows
from napari_segeval.evaluation.keys import FileKind, PredictionKey
from napari_segeval.evaluation.protocols import PRED, Protocol, get_protocol, run_has_rounds
from napari_segeval.metrics.catalog import as_float

_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}th,td{border:1px solid #ccc;
padding:2px 6px;text-align:right}th{background:#eee;cursor:pointer}td.t,th.t{text-align:left}
.thumbs{display:flex;gap:6px;flex-wrap:wrap}.thumbs figure{margin:0;text-align:center;
font-size:12px}.err{color:#a00}.note{background:#fff6d5;padding:.4em;border:1px solid #e6d48f}
pre{background:#f6f6f6;padding:.5em;overflow:auto;font-size:12px}"""

_JS = """document.querySelectorAll('table.sortable th').forEach(function(th,i){
th.addEventListener('click',function(){var tb=th.closest('table').tBodies[0];
var rows=Array.from(tb.rows);var asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort(function(a,b){var x=a.cells[i].dataset.v||a.cells[i].textContent,
y=b.cells[i].dataset.v||b.cells[i].textContent;var p=parseFloat(x),q=parseFloat(y);
var c=(!isNaN(p)&&!isNaN(q))?p-q:x.localeCompare(y);return asc?c:-c;});
rows.forEach(function(r){tb.appendChild(r);});});});"""


def recipe(run: dict, proto: Protocol | None) -> str:
    """Which recipe ran: the preset (or the defaults) and its differences from the paper."""
    if proto is None:  # a report of an unknown protocol still renders
        return ""
    try:
        preset = proto.preset(run.get("preset"))
    except Exception:  # noqa: BLE001 - a report of an unknown preset still renders
        return ""
    anchor = f"{proto.name}" + (f"-preset-{preset.name}" if preset else "")
    if preset is not None:
        head = (
            f"<p>Preset <b>{html.escape(preset.name)}</b>: follows "
            f"{html.escape(preset.source)}.</p>"
        )
    else:
        head = (
            f"<p>No preset: the protocol's defaults. <code>--preset</code> "
            f"{html.escape(', '.join(sorted(proto.presets)) or '(none)')} follows the "
            "published recipe.</p>"
        )
    diffs = proto.differences_for(run.get("preset"))
    items = "".join(f"<li>{html.escape(d)}</li>" for d in diffs) or "<li>none</li>"
    return (
        f"<h2>Recipe</h2>{head}<p>Differences from the published recipe (also in "
        f"<code>docs/protocols.md#{html.escape(anchor)}</code>):</p><ul>{items}</ul>"
    )


def file_links(files: dict | None, keys: list[PredictionKey], error: str | None = None) -> Markup:
    """Relative links to a case's saved files: each prediction of ``keys`` (in the table's
    order), its perturbed image and perturbation.
    """
    if not files:
        return Markup(html.escape(f"not saved: {error}") if error else "-")
    parts = []
    for i, key in enumerate(keys):
        name = html.escape(key.label())
        if key.round is not None:  # an interactive run's last round: its label map only
            first = html.escape(key.first_round().label()) if key.model is not None else None
            tag = f"{first or (CLEAN if key.is_clean else 'att')} r{key.round}"
            links = [(key, tag, "prediction")]
        else:  # several models: the prediction's name
            tag = CLEAN if str(key) == CLEAN else name if key.model is not None else f"att.{i}"
            links = [
                (key, tag, "prediction"),
                (key.image(FileKind.PERTURBED), f"{tag} img", "perturbed image"),
                (key.image(FileKind.PERTURBATION), f"{tag} &delta;", "perturbation"),
            ]
        parts += [
            f'<a href="{html.escape(quote(files[str(k)]))}" title="{name} {what}">{text}</a>'
            for k, text, what in links
            if str(k) in files
        ]
    return Markup(" ".join(parts))


def _pivot(rows: list[dict], records: dict) -> tuple[list[str], list[list]]:
    """Per case x structure: each condition's Dice and drop (and NSD/HD95 if any), and a last
    column linking the case's saved files (from its record in ``records``).
    """
    keys = prediction_keys(rows)
    conds = list(keys)
    cells: dict[tuple, dict] = {}
    for r in rows:
        cells.setdefault((r["case"], r["structure"]), {})[r["condition"]] = r
    extra = [m for m in ("nsd", "hd95") if any(not math.isnan(as_float(r.get(m))) for r in rows)]
    headers = ["case", "structure"] + [f"dice {c}" for c in conds]
    headers += [f"drop {c}" for c in conds[1:]] + [f"{m} {conds[0]}" for m in extra] + ["files"]
    out = []
    for (case, structure), by in sorted(cells.items()):
        d = [as_float(by[c]["dice"]) if c in by else math.nan for c in conds]
        first, rec = by.get(conds[0], {}), records.get(case, {})
        row = [case, structure, *d, *[d[0] - x for x in d[1:]]]
        row += [as_float(first.get(m)) for m in extra]
        row.append(file_links(rec.get("files"), [keys[c] for c in conds], rec.get("files_error")))
        out.append(row)
    return headers, out


def _worst(rows: list[dict], n: int, absences: bool = False) -> list[tuple[str, float, str]]:
    """Cases ranked worst first: by largest mean Dice drop when attacked, else lowest Dice
    (absences left out of the means unless ``absences``).
    """
    from napari_segeval.evaluation.summary import case_means, is_absent

    means = case_means(rows if absences else [r for r in rows if not is_absent(r)])
    keys = prediction_keys(rows)
    conds = list(keys)
    several = any(keys[c].model is not None for c in conds)  # several models: their lowest Dice
    ranked = []
    for case in sorted({c for c, _ in means}):
        clean = means.get((case, conds[0]), math.nan)
        if several:
            found = [(v, c) for c in conds if not math.isnan(v := means.get((case, c), math.nan))]
            low, cond = min(found, default=(math.nan, ""))
            score, why = (-1.0 if math.isnan(low) else low), f"lowest mean Dice {low:.3f}, {cond}"
        elif len(conds) > 1:
            drops = [clean - means[(case, c)] for c in conds[1:] if (case, c) in means]
            key = max(drops) if drops else math.nan
            score, why = (math.inf if math.isnan(key) else -key), f"largest Dice drop {key:.3f}"
        else:
            score, why = (-1.0 if math.isnan(clean) else clean), f"mean Dice {clean:.3f}"
        ranked.append((case, score, why))
    return sorted(ranked, key=lambda t: t[1])[:n]


def _thumbs(output_dir: Path, case: str, why: str) -> str:
    views = store.read_views(output_dir, case)
    if "image" not in views:
        return ""
    figs: list[tuple[str, Any]] = [("image", None)]  # (title, view array or None)
    if views.get("reference") is not None:
        figs.append(("reference", views["reference"]))
    preds = sorted((k for k in views if k.startswith(PRED)), key=lambda k: (k != PRED + CLEAN, k))
    figs += [(k.removeprefix(PRED), views[k]) for k in preds]
    parts = [
        f'<figure><img src="{F.png_data_uri(F.overlay(views["image"], lab))}" '
        f'alt="{html.escape(title)}"><figcaption>{html.escape(title)}</figcaption></figure>'
        for title, lab in figs
    ]
    return (
        f"<h3>{html.escape(case)} <small>({html.escape(why)})</small></h3>"
        f'<div class="thumbs">{"".join(parts)}</div>'
    )


def _worst_section(out: Path, rows: list[dict], n: int) -> list[str]:
    """The worst cases' thumbnails; with absences, a switch to count them in the ranking."""
    from napari_segeval.evaluation.summary import is_absent

    def block(absences: bool) -> str:
        return "".join(_thumbs(out, c, why) for c, _, why in _worst(rows, n, absences))

    n_absent = sum(1 for r in rows if is_absent(r))
    if not n_absent:
        return ["<h2>Worst cases</h2>", block(False)]
    toggle = (
        "var a=this.checked;document.getElementById('worst-real').style.display="
        "a?'none':'';document.getElementById('worst-all').style.display=a?'':'none';"
    )
    return [
        "<h2>Worst cases</h2>",
        (
            f'<p><label><input type="checkbox" id="absences" onchange="{toggle}"> count the '
            f"{n_absent} absences (rows of a structure in neither the reference nor the "
            "prediction, no failure; left out of the ranking by default)</label></p>"
        ),
        f'<div id="worst-real">{block(False)}</div>',
        f'<div id="worst-all" style="display:none">{block(True)}</div>',
    ]


def _raw_budget(b: dict) -> str:
    """A condition's raw-unit budget per channel: ``"c0: mean [min, max]; ..."``."""
    return "; ".join(
        f"{k}: {v['mean']:.4g} [{v['min']:.4g}, {v['max']:.4g}]" for k, v in b["eps_raw"].items()
    )


def build_report(output_dir: str | os.PathLike, worst: int = 4) -> str:
    """The report page of a results folder as an HTML string."""
    from napari_segeval.metrics import summarize

    out = Path(output_dir)
    run = store.read_json(out / "run.json")
    summary = store.read_json(out / "summary.json") if (out / "summary.json").is_file() else {}
    cases, records = store.load_records(out)
    all_rows = [r for r in store.result_rows(records) if r.get("status") == "ok"]
    try:
        proto: Protocol | None = get_protocol(str(run["protocol"]))
    except SegEvalError:  # not known to this installation
        proto = None
    rounds = run_has_rounds(run, all_rows)
    rows = round_rows(all_rows)
    failed = [r for r in records if r.get("status") != "ok"]
    title = f"segeval {run['protocol']} {run['protocol_version']}"
    counts = (
        f"<p>Data: <code>{html.escape(str(run.get('data', '')))}</code> "
        f"(layout {html.escape(str(run.get('layout')))}) - {len(cases)} cases, "
        f"{len(records) - len(failed)} ok, <span class='err'>{len(failed)} failed</span>, "
        f"{len(cases) - len(records)} not run. napari-segeval "
        f"{html.escape(str(run.get('napari_segeval', '')))}.</p>"
    )
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        counts,
        recipe(run, proto),
        "<h2>Parameters</h2><pre>" + html.escape(json.dumps(run["params"], indent=1)) + "</pre>",
    ]
    results = summary.get("results") or {}
    if all_rows and rounds:
        parts += ["<h2>Dice against correction round</h2>", rounds_section(results, all_rows)]
    models = list((run.get("params") or {}).get("models") or [])
    if rows and models:
        parts += model_comparison(rows, models)
        rows = round_rows(all_rows, models=True)
    parts += worklist_section(all_rows, store.slice_rows(records))
    if rows and not any("dice" in r for r in rows):
        parts.append(
            "<p class='note'>These cases have no reference labels: nothing is scored, and "
            "the worklist above ranks the structures by their estimated risk.</p>"
        )
        rows = []
    if rows:
        stats = summarize(rows, "dice", by=("structure", "condition"))
        cols = ["structure", "condition", "n", "mean", "std", "median", "q1", "q3"]
        parts += [
            "<h2>Dice per structure and condition</h2>",
            table(cols, [[s[c] for c in cols] for s in stats]),
        ]
        gated = sorted({r["case"] for r in rows if r.get("nsd_gated") in (True, "True")})
        if any("nsd_gated" in r for r in rows):
            parts.append(
                f"<p class='note'>NSD is scored only for cases whose mean DSC is above "
                f"{html.escape(str(run['params'].get('nsd_min_dice')))} (the CVPR 2024 "
                f"challenge's metric rule); it is 0 for the other {len(gated)} case(s)"
                f"{': ' + html.escape(', '.join(gated)) if gated else ''}.</p>"
            )
        if not models:  # several models: their box plots are drawn above
            parts += [
                "<h2>Box plots</h2>",
                figure(
                    "Dice box plots",
                    lambda: F.boxplot_uri(dice_groups(rows, "condition"), "dice"),
                    "Box plots need matplotlib (pip install 'napari-segeval[report]'); this "
                    "report has tables only.",
                ),
            ]
        scatter = dice_vs_uncertainty(rows)
        if scatter:
            parts += ["<h2>Dice against uncertainty</h2>", scatter]
        if proto is not None and proto.report_section is not None:
            parts.append(proto.report_section(results))
        parts.append(fold_tables(results))
        parts += robust_section(results)
        if results.get("budget"):
            budget = [[c, b["eps"], _raw_budget(b)] for c, b in results["budget"].items()]
            parts += [
                "<h2>Attack budgets</h2><p>Epsilon in the model's normalized units and "
                "in raw units (HU for CT) per channel: mean [min, max] over cases.</p>",
                table(["condition", "eps (normalized)", "eps (raw)"], budget),
            ]
        parts += [
            "<h2>Per case</h2><p>Click a column header to sort. The files column links "
            "each case's saved predictions (att.N: the N-th attack, img: its perturbed "
            "image, &delta;: the perturbation); open the whole folder in napari to "
            "browse them.</p>",
            table(*_pivot(rows, {r["case"]: r for r in records})),
        ]
        parts += _worst_section(out, rows, worst)
    if failed:
        parts += [
            "<h2 class='err'>Failed cases</h2>",
            table(["case", "reason"], [[r["case"], r.get("error", "")] for r in failed]),
        ]
    parts += [
        "<h2>Summary</h2><details><summary>summary.json</summary><pre>"
        + html.escape(json.dumps(summary.get("results", {}), indent=1))
        + "</pre></details>"
    ]
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title><style>{_CSS}</style></head><body>{''.join(parts)}"
        f"<script>{_JS}</script></body></html>"
    )


def write_report(output_dir: str | os.PathLike, worst: int = 4) -> Path:
    """Write ``DIR/report.html`` atomically and return its path."""
    out = Path(output_dir)
    return atomic_write_text(out / "report.html", build_report(out, worst), overwrite=True)


__all__ = ["build_report", "write_report"]
