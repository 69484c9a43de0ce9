"""The report's building blocks: its HTML tables and its per-protocol sections."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping

from napari_segeval._names import CLEAN
from napari_segeval.evaluation import _figures as F
from napari_segeval.evaluation.keys import PredictionKey
from napari_segeval.metrics.catalog import METRICS, as_float


class Markup(str):
    """HTML that a table cell shows as it is (built here from escaped parts)."""


def _cell(v, digits: int = 4) -> str:
    if isinstance(v, Markup):
        return f'<td class="t">{v}</td>'
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        f = float(v)
        if math.isnan(f):
            return '<td data-v="-1e99">-</td>'
        return (
            f'<td data-v="{f!r}">{f:.{digits}f}</td>' if isinstance(v, float) else f"<td>{v}</td>"
        )
    return f'<td class="t">{html.escape(str(v))}</td>'


def figure(alt: str, draw: Callable[[], str], missing: str = "") -> str:
    """``<img>`` of the data URI ``draw()`` makes, or without matplotlib the note ``missing``."""
    if not F.have_matplotlib():
        return f'<p class="note">{missing}</p>'
    return f'<img alt="{alt}" src="{draw()}">'


def table(headers: list[str], rows: list[list], sortable: bool = True) -> str:
    """An HTML table; numbers right-aligned with a sort key, text escaped."""
    head = "".join(f'<th class="t">{html.escape(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in r) + "</tr>" for r in rows)
    cls = ' class="sortable"' if sortable else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


#: Baseline conditions, listed first (the ``li2026`` preset's is its unfiltered training).
BASELINES = (CLEAN, "unfiltered")


def prediction_keys(rows: list[dict]) -> dict[str, PredictionKey]:
    """Each table name of the rows' predictions (a row's ``condition``) -> its key (the row's
    ``key``, else its condition's): baselines first, then by condition.
    """
    keys = {r["condition"]: r.get("key") or PredictionKey(r["condition"]) for r in rows}
    order = sorted(keys, key=lambda c: (keys[c].condition not in BASELINES, keys[c].condition, c))
    return {c: keys[c] for c in order}


def dice_groups(rows: list[dict], by: str) -> dict[str, dict[str, list[float]]]:
    """The rows' Dice values per structure and per value of ``by`` (a box plot's groups)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        box = groups.setdefault(r["structure"], {}).setdefault(str(r.get(by)), [])
        box.append(as_float(r.get("dice")))
    return groups


def model_comparison(rows: list[dict], models: list[str]) -> list[str]:
    """Several models per structure: median and IQR table, and per condition a box plot per
    structure, one colour per model and a dot per case (MedSAM2's figure 2).
    """
    from napari_segeval.evaluation.summary import by_model

    comp = by_model(rows)
    parts = [
        (
            "<h2>Models compared per structure</h2><p>Every model ran on the same cases "
            "with the same prompts (and attacks). Median and interquartile range "
            "[q1, q3] over cases, per structure, model and condition.</p>"
        )
    ]
    cols = ["structure", "condition", "model", "n", "median", "q1", "q3", "iqr"]
    for metric in (m for m in ("dice", "nsd") if m in comp):
        parts.append(
            f"<h3>{'DSC' if metric == 'dice' else 'NSD'}</h3>"
            + table(cols, [[t[c] for c in cols] for t in comp[metric]])
        )
    if not F.have_matplotlib():
        return [*parts, '<p class="note">The per-model box plots need matplotlib.</p>']
    for cond in prediction_keys(rows):
        groups = dice_groups([r for r in rows if r["condition"] == cond], "model")
        title = f"DSC per structure and model ({cond})"
        uri = F.boxplot_uri(groups, "DSC", order=models, dots=True, title=title)
        parts.append(f'<img alt="DSC per structure and model, {html.escape(cond)}" src="{uri}">')
    return parts


def dice_vs_uncertainty(rows: list[dict]) -> str:
    """Scatter of per-case clean foreground Dice against the case's uncertainty score."""
    from napari_segeval.evaluation.summary import dice_and_uncertainty
    from napari_segeval.uncertainty import correlation

    x, y, fg = dice_and_uncertainty(rows)
    if not any(not math.isnan(v) for v in x):
        return ""
    c = correlation(x, y)
    text = (
        f"<p>Per-case mean Dice ({'foreground structures' if fg else 'all structures'}, "
        f"clean) against the case's uncertainty score (the segmenting model's own "
        f"predictive entropy, not the Aleatoric Uncertainty Value of the li2026 preset), "
        f"n = {c['n']}: Pearson r = "
        f"{c['pearson']:.3f}, Spearman &rho; = {c['spearman']:.3f}"
        " (negative: more uncertain cases score lower Dice).</p>"
    )
    title = f"Pearson r = {c['pearson']:.3f}, Spearman = {c['spearman']:.3f}"
    return text + figure(
        "Dice against uncertainty",
        lambda: F.scatter_uri(x, y, "uncertainty score", "mean Dice", title),
        "The scatter plot needs matplotlib.",
    )


def uncertainty_tables(results: dict) -> str:
    """The ``uncertainty`` protocol's numbers: selective evaluation, or the training conditions."""
    if results.get("analysis") == "filter-training":
        conds = results.get("conditions") or {}
        energy = html.escape(str(results.get("auv_energy") or ""))
        return (
            "<h2>Training filtered by AUV</h2><p>Test-set scores in percent of the model "
            "trained on each training list (the most uncertain training cases by AUV "
            "removed; auv.json / auv.csv hold the scores; DUO: every training case, "
            "trained with the dynamic uncertainty-aware loss). AUV energy spectrum: "
            f"{energy}.</p>"
            + table(
                ["condition", "training cases", "removed", "loss"]
                + ["Dice %", "mIoU %", "test cases"],
                [
                    [k, v.get("n_train"), ", ".join(v.get("removed") or []) or "-"]
                    + [v.get("loss") or "ce-dice", v.get("dice"), v.get("iou"), v.get("n_cases")]
                    for k, v in conds.items()
                ],
                sortable=False,
            )
        )
    rc, kept = results.get("risk_coverage"), results.get("retained")
    if not rc:
        return ""
    rows = [["all cases", 0.0, (results.get("all_cases") or {}).get("dice")]]
    rows += [
        [f"{float(k):.0%} most uncertain set aside", float(k), v.get("dice")]
        for k, v in (kept or {}).items()
    ]
    return (
        "<h2>Selective evaluation</h2><p>Dice of the cases kept when the most uncertain "
        "are set aside (this judges the uncertainty score; it is not the paper's "
        f"training filter). AURC = {as_float(rc.get('aurc')):.4f} (area under the risk "
        f"1 - Dice against coverage; best possible with these cases "
        f"{as_float(rc.get('optimal_aurc')):.4f}).</p>"
        + table(["cases", "fraction set aside", "Dice %"], rows, sortable=False)
        + failure_measures(rc)
    )


#: The failure-detection measures of a ``risk_coverage`` summary, in the order shown.
_FAILURE_MEASURES = (
    ("aurc", "AURC (tied scores as one block, trapezoid)"),
    ("optimal_aurc", "AURC of the true risk (oracle)"),
    ("random_aurc", "AURC of a random order"),
    ("excess_aurc", "e-AURC"),
    ("normalised_aurc", "normalised AURC (1 oracle, 0 random)"),
    ("augrc", "AUGRC"),
    ("failure_auroc", "failure AUROC"),
    ("spearman", "Spearman (score, 1 - Dice)"),
    ("recall_at_10", "Recall@10 %"),
)


def failure_measures(rc: dict) -> str:
    """How well the score finds failing cases (results of ``uncertainty`` 2.2 on; else empty)."""
    if "normalised_aurc" not in rc:
        return ""
    below, n, n_fail = as_float(rc.get("failure_below")), rc.get("n"), rc.get("n_failures")
    return (
        f"<h3>Failure detection</h3><p>A case fails when its mean Dice is below "
        f"{below:.2f} ({n_fail} of {n} cases); definitions in the protocols page.</p>"
        + table(
            ["measure", "value"],
            [[label, as_float(rc.get(key))] for key, label in _FAILURE_MEASURES],
            sortable=False,
        )
    )


def fold_tables(results: dict) -> str:
    """``cv5-2d``: the headline class averages (mean +- std over folds) and the other reading."""
    head = results.get("headline")
    if not isinstance(head, dict) or "dice" not in results:
        return ""

    def rows(block: dict, names: dict) -> str:
        body = []
        for m in (m for m in ("dice", "iou", "recall", "precision") if m in block):
            a = block[m]["average"]
            folds = ", ".join(f"{v:.2f}" for v in a.get("folds") or [])
            body.append([names.get(m, m), a.get("mean"), a.get("std"), folds])
        return table(["metric", "mean %", "std %", "folds %"], body, sortable=False)

    parts = [
        f"<h2>Cross-validation: {html.escape(str(head.get('reading')))}</h2>"
        f"<p>{html.escape(str(head.get('definition', '')))}.</p>" + rows(results, head["names"])
    ]
    for key in ("per_image", "accumulated"):
        other = results.get(key)
        if isinstance(other, dict) and "names" in other:
            parts.append(
                f"<p>Secondary figure, {html.escape(key.replace('_', '-'))}: "
                f"{html.escape(str(other.get('definition', '')))}.</p>"
                + rows(other, other["names"])
            )
    return "".join(parts)


def robust_section(results: dict) -> list[str]:
    """``msd-robust``'s robust fraction and accuracy per condition (and model, with several)."""
    each = results.get("by_model") or {None: results}
    rows, rule, acc_note = [], "", False
    for model, res in each.items():
        robust = res.get("robust_fraction") or {}
        acc = res.get("robust_accuracy") or {}
        rule = rule or res.get("robust_rule") or ""
        acc_note = acc_note or bool(acc)
        rows += [
            ([model] if model is not None else []) + [k, v, acc.get(k, math.nan)]
            for k, v in robust.items()
        ]
    if not rows:
        return []
    head = ["model"] * ("by_model" in results) + ["condition", "robust fraction", "robust accuracy"]
    return [
        "<h2>Robust fraction</h2>",
        f"<p>{html.escape(rule)}</p>" if rule else "",
        "<p>Robust accuracy (the name ROG's code gives it): the mean attacked Dice over "
        "the cases (each case's mean over its structures).</p>"
        if acc_note
        else "",
        table(head, rows),
    ]


def _per_round(c: dict) -> str:
    """``"r1 7% · r2 3%"``: the share of structures whose Dice fell in each round."""
    return " · ".join(f"r{k} {f:.0%}" for k, f in enumerate(c.get("falls_per_round") or [], 1))


def rounds_rows(conds: Mapping[str, dict]) -> tuple[list[list], list[list]]:
    """The rows of the ``interactive`` summary's two tables: per condition and round (n,
    median Dice, q1, q3), and per condition (structures, median AUC, NoI mean and median,
    share reaching the target, share whose Dice fell).
    """
    per_round = [
        [cond, p["round"], p["n"], p["median"], p["q1"], p["q3"]]
        for cond, c in conds.items()
        for p in c["curve"]
    ]
    curve = [
        [cond, c["n_structures"], c["auc"]["median"], c["noi"]["mean"], c["noi"]["median"]]
        + [c["reached"], c["falls"]]
        for cond, c in conds.items()
    ]
    return per_round, curve


def rounds_section(results: dict, rows: list[dict]) -> str:
    """The ``interactive`` protocol: Dice against correction round (plot and table)."""
    each = results.get("by_model") or {None: results}  # several models: one curve each
    conds = {
        PredictionKey(cond, model=m).label(): c
        for m, res in each.items()
        for cond, c in (res.get("conditions") or {}).items()
    }
    if not conds:
        return ""
    models = sorted({str(r.get("model")) for r in rows if r.get("model")})
    kinds = sorted({str(r.get("refine_prompt")) for r in rows if r.get("refine_prompt")})
    first = next(iter(each.values()))
    target = float(first["target_dice"])  # interactive_curves writes it
    text = (
        f"<p>Model {html.escape(', '.join(models) or '?')}; corrections: "
        f"{html.escape(', '.join(kinds) or '?')} (one per structure and round, where the "
        f"prediction is most wrong). Median Dice after each round with its interquartile "
        f"band, over every case and structure. {html.escape(first.get('auc_rule', ''))}"
        f" (AUC); {html.escape(first.get('noi_rule', ''))}.</p>"
    )
    body, curve = rounds_rows(conds)
    summary = [[*row, _per_round(c)] for row, c in zip(curve, conds.values(), strict=True)]
    tables = table(
        ["condition", "round", "n", "median Dice", "q1", "q3"], body, sortable=False
    ) + table(
        ["condition", "structures", "AUC (median)", "NoI mean", "NoI median", f"reach {target:g}"]
        + ["Dice falls (any round)", "falls per round"],
        summary,
        sortable=False,
    )
    curves = {cond: c["curve"] for cond, c in conds.items()}
    plot = figure(
        "Dice against correction round",
        lambda: F.curves_uri(
            curves, "correction round", METRICS["dice"].title, f"model {', '.join(models)}"
        ),
        "The plot needs matplotlib.",
    )
    return text + plot + tables


def worklist_section(rows: list[dict], slices: list[dict], n: int = 20) -> list[str]:
    """The ``n`` riskiest structures with their flagged slices; nothing without risks."""
    from napari_segeval.evaluation.triage import rank

    items = rank(rows, slices)
    if not items:
        return []
    body = []
    for w in items[:n]:
        why = "; ".join(f"{f.slice}: {', '.join(x.value for x in f.flags)}" for f in w.flagged[:3])
        dice = "no reference" if math.isnan(w.dice) else w.dice
        body.append([w.case, w.structure, w.model or "", w.condition, w.risk, dice, why])
    return [
        "<h2>Worklist</h2><p>The structures most likely to be wrong, from the model's own "
        "signals (no reference needed; <code>segeval triage</code> lists them all), with "
        "the slices to look at first.</p>",
        table(["case", "structure", "model", "condition", "risk", "dice", "flagged"], body),
    ]
