"""Quantile rules for the median (yearly) combination, scored from a members.ts cache without refitting.

The point forecast is the members' median (the engine's, unchanged); each rule builds the quantiles
0.1..0.9 from the members' means and standard deviations. Prints, per cache, WQL (as run.ts), the mean
per-series scaled quantile loss (pinball loss averaged over levels and steps, divided by the in-sample
MAE of the naive forecast: every series weighs the same) with its difference to the first rule (mean
± standard error, series better / worse), WQL on odd and even series, and the coverage of the 0.1, 0.5
and 0.9 quantiles (share of test values at or below them).

    .bench/venv-forecast/bin/python bench/forecast/quantile_rules.py --cache .bench/exp/m1-yearly.json,.bench/exp/m3-yearly.json \
        --members ets,theta,arima,drift median_q mixture_lognormal mixture_normal …

Rules: median_q (1.3.0-1.4.0: the median of the members' normal quantiles, level by level),
median_q_x1.2 (its distances from the point times 1.2), pool (quantiles of the members' equal mixture of
normals), sd_mean / sd_rms / sd_max (normal around the point with the mean / root mean square / largest
member sd), mixture_var (normal around the point with the mixture's variance about its own mean),
mixture_normal (normal around the point with s² = mean(sd_i² + (mean_i − point)²)), mixture_normal_t
(the same with Student-t quantiles, n − 2 degrees of freedom), mixture_lognormal (1.5.0: that s, log-normal
with the point as median and σ² = ln(1 + s²/point²) for a positive history and point, normal otherwise),
mixture_logdist (point · exp(z s / point)).
"""
import argparse
import json

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import t as student_t

TAUS = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
Z = ndtri(TAUS)
Z[4] = 0.0


def pool_quantiles(means, sds):
    out = np.zeros((len(TAUS), means.shape[1]))
    for k in range(means.shape[1]):
        m, s = means[:, k], np.maximum(sds[:, k], 1e-12)
        a = np.full(len(TAUS), np.min(m - 8 * s))
        b = np.full(len(TAUS), np.max(m + 8 * s))
        for _ in range(80):
            c = (a + b) / 2
            below = ndtr((c[:, None] - m[None, :]) / s[None, :]).mean(axis=1) < TAUS
            a, b = np.where(below, c, a), np.where(below, b, c)
        out[:, k] = (a + b) / 2
    return out


def quantiles(rule, means, sds, y):
    point = np.median(means, axis=0)
    mix = np.sqrt(np.mean(sds ** 2 + (means - point) ** 2, axis=0))
    positive = bool(np.all(y > 0))
    if rule.startswith("median_q"):
        q = np.median(means[:, None, :] + Z[None, :, None] * sds[:, None, :], axis=0)
        f = float(rule.split("_x")[1]) if "_x" in rule else 1.0
        return point + (q - point) * f
    if rule == "pool":
        return pool_quantiles(means, sds)
    if rule == "sd_mean":
        return point + Z[:, None] * np.mean(sds, axis=0)
    if rule == "sd_rms":
        return point + Z[:, None] * np.sqrt(np.mean(sds ** 2, axis=0))
    if rule == "sd_max":
        return point + Z[:, None] * np.max(sds, axis=0)
    if rule == "mixture_var":
        return point + Z[:, None] * np.sqrt(np.mean(sds ** 2, axis=0) + np.var(means, axis=0))
    if rule == "mixture_normal":
        return point + Z[:, None] * mix
    if rule == "mixture_normal_t":
        zt = student_t.ppf(TAUS, max(1, len(y) - 2))
        zt[4] = 0.0
        return point + zt[:, None] * mix
    if rule in ("mixture_lognormal", "mixture_logdist"):
        q = point + Z[:, None] * mix
        ok = positive & (point > 0)
        p = np.where(point > 0, point, 1.0)
        if rule == "mixture_lognormal":
            ln = p * np.exp(Z[:, None] * np.sqrt(np.log1p((mix / p) ** 2)))
        else:
            ln = p * np.exp(Z[:, None] * mix / p)
        return np.where(ok[None, :], ln, q)
    raise SystemExit(f"unknown rule {rule}")


def pinball(y, q):
    return np.sum(2 * np.abs((y[None, :] - q) * ((y[None, :] <= q).astype(float) - TAUS[:, None])), axis=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--members", default="ets,theta,arima,drift")
    ap.add_argument("rules", nargs="+")
    args = ap.parse_args()
    members = args.members.split(",")
    for cache in args.cache.split(","):
        series = json.load(open(cache))["series"]
        print(f"{cache}: {len(series)} series")
        first = None
        for rule in args.rules:
            loss, absy, scaled, cov, n = [], [], [], np.zeros(3), 0
            for s in series:
                means = np.array([s["full"][m]["mean"] for m in members])
                sds = np.array([s["full"][m]["sd"] for m in members])
                train, y = np.asarray(s["train"], float), np.asarray(s["test"], float)
                q = quantiles(rule, means, sds, train)
                if np.all(train >= 0):
                    q = np.maximum(q, 0)
                q = np.sort(q, axis=0)
                lj = pinball(y, q)
                loss.append(lj.sum() / len(TAUS))
                absy.append(np.abs(y).sum())
                d = np.abs(np.diff(train))
                scale = d.mean() if len(d) and d.mean() > 0 else 1.0
                scaled.append(lj.sum() / len(TAUS) / len(y) / scale)
                cov += [(y <= q[0]).sum(), (y <= q[4]).sum(), (y <= q[8]).sum()]
                n += len(y)
            loss, absy, scaled = np.array(loss), np.array(absy), np.array(scaled)
            wql = loss.sum() / absy.sum()
            odd, even = loss[0::2].sum() / absy[0::2].sum(), loss[1::2].sum() / absy[1::2].sum()
            line = f"  {rule:20s} WQL {wql:.4f} (odd {odd:.4f}, even {even:.4f})  scaled {scaled.mean():.4f}"
            if first is None:
                first = scaled
            else:
                diff = scaled - first
                line += f" ({diff.mean():+.4f} ± {diff.std(ddof=1) / np.sqrt(len(diff)):.4f}, better {np.sum(diff < 0)} / worse {np.sum(diff > 0)})"
            line += f"  coverage 0.1/0.5/0.9: {cov[0] / n:.3f} / {cov[1] / n:.3f} / {cov[2] / n:.3f}"
            print(line)


if __name__ == "__main__":
    main()
