"""Build irmodels/data/registry.json from the shared data mirror's MANIFEST.csv.

Run from the repository root: ``python scripts/build_registry.py ../shared/data/ir-scores``.
The sha256 of every file is computed from the mirror copy; URLs are pinned to the commit in
the manifest (``https://raw.githubusercontent.com/<repo>/<commit>/data/<original name>``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from pathlib import Path

MEASURES = {"ap": "AP", "p10": "P@10", "p20": "P@20", "rr": "RR", "ndcg20": "nDCG@20",
            "err20": "ERR@20", "ndcg": "nDCG", "unstated": "unknown"}

CITATIONS = {
    "julian-urbano/sigir2019-statistical": (
        "J. Urbano, H. Lima, A. Hanjalic. Statistical Significance Testing in Information "
        "Retrieval: An Empirical Analysis of Type I, Type II and Type III Errors. SIGIR 2019."
    ),
    "julian-urbano/sigir2018-simulation": (
        "J. Urbano, T. Nagler. Stochastic Simulation of Test Collections: Evaluation Scores. "
        "SIGIR 2018."
    ),
    "julian-urbano/sigir2019-standardization": (
        "J. Urbano, H. Lima, A. Hanjalic. A New Perspective on Score Standardization. SIGIR 2019."
    ),
    "julian-urbano/irj2015-reliability": (
        "J. Urbano. Test Collection Reliability: A Study of Bias and Robustness to Statistical "
        "Assumptions via Stochastic Simulation. Information Retrieval Journal, 2016."
    ),
    "julian-urbano/gt4ireval": (
        "J. Urbano, M. Marrero, D. Martin. On the Measurement of Test Collection Reliability. "
        "SIGIR 2013 (R package gt4ireval)."
    ),
}


def main(mirror: Path, out: Path) -> None:
    entries = []
    with open(mirror / "MANIFEST.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            repo, commit, name = row["source_repository"], row["source_commit"], row["file"]
            mirror_only = repo == "julian-urbano/gt4ireval"
            upstream = f"data/{row['collection']}.rda" if mirror_only else f"data/{name}"
            url = f"https://raw.githubusercontent.com/{repo}/{commit}/{upstream}"
            entries.append({
                "collection": row["collection"],
                "measure": MEASURES[row["measure"]],
                "file": name,
                "topics": int(row["topics"]),
                "systems": int(row["systems"]),
                "topic_id_column": row["topic_id_column"] == "yes",
                "source_repository": repo,
                "source_commit": commit,
                "url": None if mirror_only else url,
                "upstream": url,
                "mirror_only": mirror_only,
                "sha256": hashlib.sha256((mirror / name).read_bytes()).hexdigest(),
                "licence": row["license"],
                "citation": CITATIONS[repo],
            })
    out.write_text(json.dumps({"version": 1, "datasets": entries}, indent=1) + "\n")
    print(f"wrote {len(entries)} entries to {out}")


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else root.parent / "shared" / "data" / "ir-scores",
         root / "irmodels" / "data" / "registry.json")
