"""Reference learners for the tabular benchmark: LightGBM, scikit-learn HistGradientBoosting and
CatBoost, all with default parameters, on the exact folds chosen by the TypeScript runner.

Usage: python peers.py JOB.json  ->  prints one JSON object on stdout.

JOB.json: {"csv": path, "target": "target", "task": "binary"|"multiclass"|"regression",
           "n_classes": int, "y": [...]  (class index per CSV row, or the value for regression),
           "folds": [...] (fold id per CSV row), "peers": ["lightgbm", "sklearn", "catboost"], "seed": int}
Output:   {"lightgbm": {"folds": [{"pred": [...], "fit_s": float, "predict_s": float}, ...]}, ...}
          pred holds, for the test rows of the fold in CSV order, n_classes probabilities per row
          (flattened; classes missing from a training fold get 0) or the regression value.
All learners run on one core (LightGBM n_jobs=1, OMP_NUM_THREADS=1 for scikit-learn, CatBoost
thread_count=1): threading is not a model parameter, and single-core timings compare like with like on
a shared machine. Text columns are given as pandas `category` dtype (categories from the whole column)
so that LightGBM and scikit-learn use their native categorical handling; CatBoost gets them as its
native `cat_features`, as strings, a missing category being the string "nan".
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
    if peer == "catboost":
        import catboost as cb

        common = dict(random_seed=seed, thread_count=1, verbose=0, allow_writing_files=False)
        if task == "regression":
            return cb.CatBoostRegressor(**common)
        return cb.CatBoostClassifier(**common)
    raise SystemExit(f"unknown peer {peer}")


def for_catboost(X):
    """CatBoost takes categorical columns as strings (it refuses NaN there); numbers stay as they are."""
    Xc = X.copy()
    cats = []
    for j, c in enumerate(X.columns):
        if isinstance(X[c].dtype, pd.CategoricalDtype):
            col = X[c].astype(object)
            Xc[c] = col.where(col.notna(), "nan").astype(str)
            cats.append(j)
    return Xc, cats


PEER_NAMES = {"lightgbm": "lightgbm", "sklearn": "sklearn_hgb", "catboost": "catboost"}


def run(job):
    X, y = load(job)
    folds = np.asarray(job["folds"])
    task = job["task"]
    K = job.get("n_classes") or 0
    out = {}
    Xcb, cat_idx = for_catboost(X) if "catboost" in job["peers"] else (None, [])
    for peer in job["peers"]:
        name = PEER_NAMES[peer]
        Xp = Xcb if peer == "catboost" else X
        res = []
        for f in sorted(set(folds.tolist())):
            tr = folds != f
            te = folds == f
            Xtr, Xte = Xp[tr], Xp[te]
            ytr = y[tr]
            model = make(peer, task, job.get("seed", 0))
            fit_y = ytr if task == "regression" else ytr.astype(int)
            fit_kw = {"cat_features": cat_idx} if peer == "catboost" else {}
            t0 = time.perf_counter()
            model.fit(Xtr, fit_y, **fit_kw)
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
                    full[:, int(float(c))] = proba[:, j]
                flat = [float(v) for v in full.reshape(-1)]
            res.append({"pred": flat, "fit_s": t1 - t0, "predict_s": t2 - t1})
        out[name] = {"folds": res}
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    json.dump(run(job), sys.stdout)
