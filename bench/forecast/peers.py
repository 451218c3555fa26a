"""Peer run for bench/forecast: statsforecast AutoETS, AutoTheta, AutoARIMA, SeasonalNaive.

Reads the long-format M3-style CSV, fits every series' train part, forecasts its test part and
prints (or writes) JSON: per period, the forecasts of each model (mean and quantiles 0.1..0.9) and
the fitting seconds of each model, single process (n_jobs=1). A warm-up on a few series runs first
so that one-off start-up/compilation cost is reported apart (`warmup_seconds`), not inside a model.

Selection: --only PERIODS, --limit N (first N series of each period), --every K (then every K-th of
those, as run.ts's --every: series 0, K, 2K, ... of each period). With --chunk N the series of a
period are fitted N at a time, all four models on a chunk before the next chunk (each series is
fitted on its own, so the forecasts are the same as in one call); with --out the file is rewritten
(atomically) after every chunk, with "complete": false and per period "done" (how many of its
"series", from the first, every model has forecast) until the run ends. --resume continues from
such a file: periods and chunks already done are kept (their seconds too), the rest are fitted.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import pandas as pd

SEASON = {"YEARLY": 1, "QUARTERLY": 4, "MONTHLY": 12, "OTHER": 1,
          "WEEKLY": 52, "DAILY": 7, "HOURLY": 24, "HALFHOURLY": 48}
LEVELS = [20, 40, 60, 80]  # gives quantiles 0.1..0.9 with the mean as 0.5
TAUS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def quantiles_of(fc, name):
    cols = []
    for tau in TAUS:
        if tau == 0.5:
            cols.append(fc[name].to_numpy())
        elif tau < 0.5:
            lv = int(round((1 - 2 * tau) * 100))
            cols.append(fc[f"{name}-lo-{lv}"].to_numpy())
        else:
            lv = int(round((2 * tau - 1) * 100))
            cols.append(fc[f"{name}-hi-{lv}"].to_numpy())
    q = np.vstack(cols)  # taus x rows
    q = np.sort(q, axis=0)
    return q


def write_atomic(path, out):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(json.dumps(out))
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=0, help="series per chunk (0: a whole period at once)")
    ap.add_argument("--out", default="")
    ap.add_argument("--resume", action="store_true", help="continue the partial run in --out")
    args = ap.parse_args()
    if args.resume and not args.out:
        ap.error("--resume needs --out")

    from statsforecast import StatsForecast
    from statsforecast.models import AutoARIMA, AutoETS, AutoTheta, SeasonalNaive
    import statsforecast

    df = pd.read_csv(args.data, dtype={"series_id": str, "period": str, "split": str})
    only = [p.strip().upper() for p in args.only.split(",") if p.strip()]
    out = {"statsforecast_version": statsforecast.__version__, "complete": False, "periods": []}
    previous = {}
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        if old.get("statsforecast_version") != statsforecast.__version__:
            sys.exit(f"{args.out} was written by statsforecast {old.get('statsforecast_version')}, not {statsforecast.__version__}")
        previous = {p["period"]: p for p in old["periods"]}
        print(f"resuming {args.out}: " + ", ".join(f"{p} {q.get('done', len(q['series']))}/{len(q['series'])}"
                                                   for p, q in previous.items()), file=sys.stderr)

    # warm-up (compilation / first-call costs), reported apart
    t0 = time.perf_counter()
    warm = pd.DataFrame({"unique_id": "w", "ds": np.arange(1, 49), "y": 10 + np.sin(np.arange(48)) + np.arange(48) * 0.1})
    for m in (1, 4, 12):
        StatsForecast(models=[AutoETS(season_length=m), AutoTheta(season_length=m), AutoARIMA(season_length=m),
                              SeasonalNaive(season_length=m)], freq=1, n_jobs=1).forecast(df=warm, h=4, level=LEVELS)
    out["warmup_seconds"] = time.perf_counter() - t0

    for period in [p for p in ["YEARLY", "QUARTERLY", "MONTHLY", "OTHER", "WEEKLY", "DAILY", "HOURLY", "HALFHOURLY"]
                   if p in set(df["period"])]:
        if only and period not in only:
            continue
        sub = df[df["period"] == period]
        ids = list(dict.fromkeys(sub["series_id"]))
        if args.limit > 0:
            ids = ids[: args.limit]
        if args.every > 1:
            ids = ids[:: args.every]
        sub = sub[sub["series_id"].isin(ids)]
        train = sub[sub["split"] == "train"].sort_values(["series_id", "t"])
        h = int(sub["horizon"].iloc[0])
        m = SEASON[period]
        y_all = pd.DataFrame({"unique_id": train["series_id"].to_numpy(), "ds": train["t"].to_numpy(), "y": train["value"].to_numpy(float)})
        models = {
            "statsforecast_autoets": ("AutoETS", lambda: AutoETS(season_length=m)),
            "statsforecast_autotheta": ("AutoTheta", lambda: AutoTheta(season_length=m)),
            "statsforecast_autoarima": ("AutoARIMA", lambda: AutoARIMA(season_length=m)),
            "statsforecast_seasonalnaive": ("SeasonalNaive", lambda: SeasonalNaive(season_length=m)),
        }
        res = {"period": period, "horizon": h, "series": ids, "done": 0,
               "systems": {key: {"seconds": 0.0, "mean": [], "quantiles": [[] for _ in TAUS]} for key in models}}
        prev = previous.get(period)
        if prev is not None:
            if prev["series"] != ids or prev["horizon"] != h or set(prev["systems"]) != set(models):
                sys.exit(f"{args.out}: {period} was run on other series or models; start afresh without --resume")
            res = prev
            res.setdefault("done", len(ids))
        out["periods"].append(res)
        step = args.chunk if args.chunk > 0 else len(ids)
        while res["done"] < len(ids):
            chunk = ids[res["done"]: res["done"] + step]
            y = y_all[y_all["unique_id"].isin(chunk)]
            for key, (name, make) in models.items():
                t0 = time.perf_counter()
                fc = StatsForecast(models=[make()], freq=1, n_jobs=1).forecast(df=y, h=h, level=LEVELS)
                secs = time.perf_counter() - t0
                fc = fc.reset_index() if "unique_id" not in fc.columns else fc
                fc = fc.set_index("unique_id").loc[chunk].reset_index()
                q = quantiles_of(fc, name)
                sysres = res["systems"][key]
                sysres["seconds"] += secs
                sysres["mean"].extend(fc[name].to_numpy().reshape(len(chunk), h).tolist())
                for i in range(len(TAUS)):
                    sysres["quantiles"][i].extend(q[i].reshape(len(chunk), h).tolist())
                print(f"{period} {key} series {res['done'] + 1}-{res['done'] + len(chunk)}/{len(ids)} {secs:.1f}s", file=sys.stderr)
            res["done"] += len(chunk)
            if args.out:
                write_atomic(args.out, out)

    out["complete"] = True
    if args.out:
        write_atomic(args.out, out)
    else:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
