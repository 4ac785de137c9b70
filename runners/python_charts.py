# abox's chart data for the code plane's Python runner (aboxd sends this
# file ahead of python_runner.py): what a matplotlib figure shows, as the
# `chart` field of a result, in the shape the E2B SDKs' Chart types read:
# line, scatter, bar, pie and box_and_whisker charts, a superchart for a
# figure of several axes, "unknown" for anything else. It reads the
# artists the figure holds (the data behind them is gone by then): lines'
# points, scatter offsets, bar rectangles, pie wedges, box plots' boxes,
# whiskers, medians and fliers.
import re as _re

_UNIT = _re.compile(r"\s\((.*?)\)|\[(.*?)\]")


def _num(v):
    """A float rounded to 8 significant digits (drawing arithmetic noise off)."""
    try:
        return float("%.8g" % float(v))
    except (TypeError, ValueError):
        return v


def _text(s):
    return s if s else None


def _unit(label):
    m = _UNIT.search(label or "")
    return (m.group(1) or m.group(2)) if m else None


def _is_date_axis(axis):
    conv = getattr(axis, "converter", None)
    if conv is None and hasattr(axis, "get_converter"):
        conv = axis.get_converter()
    return conv is not None and "Date" in type(conv).__name__


def _categories(axis):
    """{position: name} of a categorical axis, or None."""
    units = getattr(axis, "units", None)
    mapping = getattr(units, "_mapping", None)
    if mapping is None:
        return None
    return {float(v): str(k) for k, v in mapping.items()}


def _point(v, date_axis):
    import datetime
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if type(v).__name__ == "datetime64":
        return str(v.astype("datetime64[s]"))
    if isinstance(v, str):
        return v
    if date_axis:
        import matplotlib.dates as mdates
        return mdates.num2date(float(v)).isoformat()
    return _num(v)


def _ticks(ax, which):
    axis = ax.xaxis if which == "x" else ax.yaxis
    ticks = ax.get_xticks() if which == "x" else ax.get_yticks()
    labels = [t.get_text() for t in (ax.get_xticklabels() if which == "x" else ax.get_yticklabels())]
    scale = ax.get_xscale() if which == "x" else ax.get_yscale()
    if _is_date_axis(axis):
        import matplotlib.dates as mdates
        return [mdates.num2date(float(t)).isoformat() for t in ticks], labels, "datetime"
    if _categories(axis) is not None:
        scale = "categorical"
    return [float(t) for t in ticks], labels, scale


def _base(ax, kind):
    return {"type": kind, "title": _text(ax.get_title()), "elements": []}


def _planar(ax, kind):
    c = _base(ax, kind)
    xl, yl = _text(ax.get_xlabel()), _text(ax.get_ylabel())
    c.update({"x_label": xl, "y_label": yl, "x_unit": _unit(xl), "y_unit": _unit(yl)})
    return c


def _swap(c):
    c["x_label"], c["y_label"] = c["y_label"], c["x_label"]
    c["x_unit"], c["y_unit"] = c["y_unit"], c["x_unit"]


def _is_grid_line(line):
    x, y = line.get_xdata(), line.get_ydata()
    return len(x) == 2 and len(y) == 2 and (x[0] == x[1] or y[0] == y[1])


def _points_chart(ax, kind):
    c = _planar(ax, kind)
    for which in ("x", "y"):
        ticks, labels, scale = _ticks(ax, which)
        c[which + "_ticks"], c[which + "_tick_labels"], c[which + "_scale"] = ticks, labels, scale
    xdate, ydate = _is_date_axis(ax.xaxis), _is_date_axis(ax.yaxis)
    if kind == "line":
        for n, line in enumerate(l for l in ax.get_lines() if not _is_grid_line(l)):
            label = line.get_label()
            if label.startswith("_child") or label.startswith("_line"):
                label = "Line %d" % n
            pts = [[_point(x, False), _point(y, False)] for x, y in zip(line.get_xdata(), line.get_ydata())]
            c["elements"].append({"label": label, "points": pts})
    else:
        for coll in ax.collections:
            pts = [[_point(x, xdate), _point(y, ydate)] for x, y in coll.get_offsets()]
            c["elements"].append({"label": coll.get_label(), "points": pts})
    return c


def _bar_chart(ax):
    c = _planar(ax, "bar")
    flipped = False
    for n, cont in enumerate(getattr(ax, "containers", [])):
        group = cont.get_label() or ""
        if group.startswith("_container"):
            group = "Group %d" % n
        bars = list(cont)
        horizontal = getattr(cont, "orientation", None) == "horizontal"
        axis = ax.yaxis if horizontal else ax.xaxis
        cats = _categories(axis) or {}
        for r in bars:
            pos = r.get_y() + r.get_height() / 2 if horizontal else r.get_x() + r.get_width() / 2
            value = r.get_width() if horizontal else r.get_height()
            label = cats.get(_num(pos))
            if label is None:
                label = "%g" % _num(pos)
            c["elements"].append({"label": label, "group": group, "value": _num(value)})
        flipped = flipped or horizontal
    if flipped:
        _swap(c)
    return c


def _pie_chart(ax):
    c = _base(ax, "pie")
    for w in ax.patches:
        # wedge angles carry float32 noise (323.99999 for 324): 4 decimals
        c["elements"].append({"label": w.get_label(), "angle": abs(round(float(w.theta2 - w.theta1), 4)),
                              "radius": _num(w.r)})
    return c


def _box_chart(ax):
    c = _planar(ax, "box_and_whisker")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    boxes = []
    for patch in ax.patches:
        v = patch.get_path().vertices
        xs, ys = [_num(x) for x in v[:, 0]], [_num(y) for y in v[:, 1]]
        boxes.append({"lo": (min(xs), min(ys)), "hi": (max(xs), max(ys))})
    # a standard box plot's boxes share their width; one drawn sideways
    # (vert=False) its height: then the values run along x
    sideways = len(boxes) > 1 and len({round(b["hi"][0] - b["lo"][0], 6) for b in boxes}) > 1 and \
        len({round(b["hi"][1] - b["lo"][1], 6) for b in boxes}) == 1
    if sideways:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        _swap(c)
    p, q = (1, 0) if sideways else (0, 1)  # position axis, value axis
    out = []
    for i, b in enumerate(boxes):
        lo_p, hi_p = b["lo"][p], b["hi"][p]
        e = {"label": labels[i] if i < len(labels) else str(i + 1), "min": None,
             "first_quartile": b["lo"][q], "median": None, "third_quartile": b["hi"][q], "max": None,
             "outliers": []}
        for line in ax.lines:
            d = [[_num(x) for x in line.get_xdata()], [_num(y) for y in line.get_ydata()]]
            pos, val = d[p], d[q]
            if not pos or not all(lo_p <= x <= hi_p for x in pos):
                continue
            if line.get_linestyle() in ("None", "none", " ", ""):  # fliers: markers only
                e["outliers"].extend(val)
            elif len(val) == 2 and val[0] == val[1]:
                if e["first_quartile"] <= val[0] <= e["third_quartile"]:
                    e["median"] = val[0]
            elif len(val) == 2:
                if max(val) == e["first_quartile"]:
                    e["min"] = min(val)
                elif min(val) == e["third_quartile"]:
                    e["max"] = max(val)
        e["min"] = e["first_quartile"] if e["min"] is None else e["min"]
        e["max"] = e["third_quartile"] if e["max"] is None else e["max"]
        out.append(e)
    c["elements"] = out
    return c


def _kind(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text
    children = getattr(ax, "_children", None)
    if children is None:
        children = list(ax.lines) + list(ax.collections) + list(ax.patches) + list(ax.artists)
    objs = [o for o in children if not isinstance(o, Text)]
    if objs and all(isinstance(o, Line2D) for o in objs):
        return "line"
    if objs and all(isinstance(o, (PathPatch, Line2D)) for o in objs):
        return "box_and_whisker"
    objs = [o for o in objs if not (isinstance(o, Line2D) and _is_grid_line(o))]
    for kind, cls in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
        if objs and all(isinstance(o, cls) for o in objs):
            return kind
    return "unknown"


def _axes_chart(ax):
    kind = _kind(ax)
    if kind in ("line", "scatter"):
        return _points_chart(ax, kind)
    if kind == "bar":
        return _bar_chart(ax)
    if kind == "pie":
        return _pie_chart(ax)
    if kind == "box_and_whisker":
        return _box_chart(ax)
    return _base(ax, "unknown")


def chart_of_figure(fig):
    """The chart a figure shows (a dict), or None for a blank figure."""
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if any(t.get_text() == "" for ax in axes for t in ax.get_xticklabels()) and hasattr(fig, "draw_without_rendering"):
        fig.draw_without_rendering()  # tick labels are set when a figure is drawn
    if len(axes) > 1:
        sup = getattr(fig, "_suptitle", None)
        return {"type": "superchart", "title": _text(sup.get_text() if sup else ""),
                "elements": [_axes_chart(ax) for ax in axes]}
    return _axes_chart(axes[0])


def chart_data(obj):
    """The `chart` of obj when it is a matplotlib figure, else None."""
    import sys
    if "matplotlib" not in sys.modules or type(obj).__name__ != "Figure" or not hasattr(obj, "get_axes"):
        return None
    try:
        return chart_of_figure(obj)
    except Exception:
        return None
