"""Reference learners for the tabular benchmark: LightGBM and scikit-learn HistGradientBoosting,
both with default parameters, on the exact folds chosen by the TypeScript runner.

Usage: python peers.py JOB.json  ->  prints one JSON object on stdout.

JOB.json: {"csv": path, "target": "target", "task": "binary"|"multiclass"|"regression",
           "n_classes": int, "y": [...]  (class index per CSV row, or the value for regression),
           "folds": [...] (fold id per CSV row), "peers": ["lightgbm", "sklearn"], "seed": int}
Output:   {"lightgbm": {"folds": [{"pred": [...], "fit_s": float, "predict_s": float}, ...]}, ...}
          pred holds, for the test rows of the fold in CSV order, n_classes probabilities per row
          (flattened; classes missing from a training fold get 0) or the regression value.
All learners run on one core (LightGBM n_jobs=1, OMP_NUM_THREADS=1 for scikit-learn): threading is
not a model parameter, and single-core timings compare like with like on a shared machine.
Text columns are given as pandas `category` dtype (categories from the whole column) so that both
learners use their native categorical handling.
"""
import os

# one core for every system (our engine is single-threaded); set before numpy/sklearn load OpenMP
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
import sys
import time
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")


def load(job):
    df = pd.read_csv(job["csv"], keep_default_na=False, na_values=[""], low_memory=False)
    X = df.drop(columns=[job["target"]])
    # positional names: LightGBM refuses some characters in feature names
    X.columns = [f"f{i}" for i in range(X.shape[1])]
    for c in X.columns:
        if X[c].dtype == object:
            X[c] = X[c].astype("category")
        elif X[c].dtype == bool:
            X[c] = X[c].astype(np.int8)
    y = np.asarray(job["y"], dtype=float)
    if len(y) != len(X):
        raise SystemExit(f"row count mismatch: csv {len(X)} vs job {len(y)}")
    return X, y


def make(peer, task, seed):
    if peer == "lightgbm":
        import lightgbm as lgb

        if task == "regression":
            return lgb.LGBMRegressor(random_state=seed, verbose=-1, n_jobs=1)
        return lgb.LGBMClassifier(random_state=seed, verbose=-1, n_jobs=1)
    if peer == "sklearn":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        if task == "regression":
            return HistGradientBoostingRegressor(random_state=seed)
        return HistGradientBoostingClassifier(random_state=seed)
    raise SystemExit(f"unknown peer {peer}")


def run(job):
    X, y = load(job)
    folds = np.asarray(job["folds"])
    task = job["task"]
    K = job.get("n_classes") or 0
    out = {}
    for peer in job["peers"]:
        name = "lightgbm" if peer == "lightgbm" else "sklearn_hgb"
        res = []
        for f in sorted(set(folds.tolist())):
            tr = folds != f
            te = folds == f
            Xtr, Xte = X[tr], X[te]
            ytr = y[tr]
            model = make(peer, task, job.get("seed", 0))
            fit_y = ytr if task == "regression" else ytr.astype(int)
            t0 = time.perf_counter()
            model.fit(Xtr, fit_y)
            t1 = time.perf_counter()
            if task == "regression":
                pred = model.predict(Xte)
                t2 = time.perf_counter()
                flat = [float(v) for v in pred]
            else:
                proba = model.predict_proba(Xte)
                t2 = time.perf_counter()
                full = np.zeros((Xte.shape[0], K))
                for j, c in enumerate(model.classes_):
                    full[:, int(c)] = proba[:, j]
                flat = [float(v) for v in full.reshape(-1)]
            res.append({"pred": flat, "fit_s": t1 - t0, "predict_s": t2 - t1})
        out[name] = {"folds": res}
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    json.dump(run(job), sys.stdout)
