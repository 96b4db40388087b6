# e2b_repl_rich.py — the Python REPL's rich results (api/compat/e2b_repl.py loads this
# only when a cell imports matplotlib or PIL, or gives a pandas DataFrame): matplotlib
# figures shown as IPython's inline backend shows them (plt.show() and the figures a
# cell leaves open become display()ed results with a png), with E2B's `chart` (the
# figure's data: line, scatter, bar, pie, box_and_whisker, superchart or unknown);
# PIL's Image.show() and a save from the cell become display()s; a DataFrame's `data`.
# Runs in its own namespace; the REPL passes `display` in. See docs/e2b.md.
import base64
import io
import math
import re
import sys

BACKEND = "module://_sandlot_inline"


def jsonable(v):
    """v with numpy scalars made Python's, NaN and infinities None, dates ISO strings."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if hasattr(v, "item") and callable(v.item) and type(v).__module__ == "numpy":
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "isoformat"):
        try:
            return v.isoformat()
        except Exception:
            pass
    return str(v)


# ---- pandas ----


def dataframe_data(df):
    """A DataFrame's `data`, as E2B gives it: to_dict(orient='list')."""
    return jsonable(df.to_dict(orient="list"))


# ---- PIL ----


def install_pil(image_mod):
    """Image.show() displays the image; so does a save() called from the cell's code."""
    cls = image_mod.Image
    save = cls.save

    def show(self, *args, **kwargs):
        display(self)

    def save_and_display(self, *args, **kwargs):
        r = save(self, *args, **kwargs)
        caller = sys._getframe(1).f_code.co_filename
        if caller == "<cell>":
            display(self)
        return r

    cls.show = show
    cls.save = save_and_display


# ---- matplotlib: the inline backend ----


def install_matplotlib(mpl, environ):
    """Figures draw with Agg; show() and the end of a cell display them. A backend the
    user picks (MPLBACKEND, matplotlib.use) is left alone."""
    import types

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    mod = types.ModuleType("_sandlot_inline")
    mod.FigureCanvas = FigureCanvasAgg
    mod.show = show
    sys.modules["_sandlot_inline"] = mod
    if not environ.get("MPLBACKEND"):
        mpl.use(BACKEND)
    _hook_boxplots(mpl)


def show(*args, **kwargs):
    """plt.show(): every open figure display()ed, then closed (IPython's inline
    backend)."""
    from matplotlib import pyplot as plt
    from matplotlib._pylab_helpers import Gcf

    for m in Gcf.get_all_fig_managers():
        display(m.canvas.figure)
    plt.close("all")


def flush_figures():
    """The end of a cell: the figures it left open, displayed and closed."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None or "matplotlib.pyplot" not in sys.modules:
        return
    if mpl.get_backend() != BACKEND:
        return
    show()


def _hook_boxplots(mpl):
    """Axes.bxp (what boxplot() draws with) records its artists on the axes: a box
    plot's parts are Line2Ds and patches that say nothing of what they are."""
    import matplotlib.axes

    bxp = matplotlib.axes.Axes.bxp
    if getattr(bxp, "_sandlot", False):
        return

    def recorded(self, *args, **kwargs):
        r = bxp(self, *args, **kwargs)
        vert = kwargs.get("vert", args[2] if len(args) > 2 else True)
        self.__dict__.setdefault("_sandlot_boxes", []).append((r, vert is not False))
        return r

    recorded._sandlot = True
    matplotlib.axes.Axes.bxp = recorded


def figure_formats(fig, ev):
    """A figure's result: png (as the inline backend prints it, tight bounding box) and
    its chart when its data can be read."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    ev["png"] = base64.b64encode(buf.getvalue()).decode()
    try:
        c = chart(fig)
    except Exception:
        c = None
    if c is not None:
        ev["chart"] = jsonable(c)


# ---- charts ----


def _text(s):
    s = s.get_text() if hasattr(s, "get_text") else s
    return s if s else None


_UNIT = re.compile(r"[(\[]([^()\[\]]+)[)\]]\s*$")


def _unit(label):
    """The unit a label names at its end: "Time (s)" is s, "Price [USD]" is USD."""
    m = _UNIT.search(label or "")
    return m.group(1).strip() if m else None


def _converter_module(axis):
    get = getattr(axis, "get_converter", None)
    conv = get() if get else getattr(axis, "converter", None)
    return type(conv).__module__ if conv is not None else ""


def _scale(axis):
    mod = _converter_module(axis)
    if mod == "matplotlib.dates":
        return "datetime"
    if mod == "matplotlib.category":
        return "categorical"
    return axis.get_scale()


def _value(axis, scale, v):
    """A coordinate as the chart gives it: a date's ISO string, a category's name."""
    if scale == "datetime":
        from matplotlib import dates

        return dates.num2date(float(v)).isoformat()
    if scale == "categorical":
        units = getattr(axis, "units", None)
        for name, pos in (getattr(units, "_mapping", None) or {}).items():
            if pos == v:
                return name
    return float(v)


def _chart2d(kind, ax, title):
    """A 2-D chart's head: type, title, the axes' labels and units."""
    chart = {"type": kind, "title": title}
    for k, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        label = _text(axis.get_label())
        chart[k + "_label"] = label
        chart[k + "_unit"] = _unit(label)
    return chart


def _ticks_part(ax, chart):
    for k, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        scale = _scale(axis)
        chart[k + "_scale"] = scale
        chart[k + "_ticks"] = [
            _value(axis, scale, t) if scale != "categorical" else float(t)
            for t in axis.get_ticklocs()
        ]
        chart[k + "_tick_labels"] = [t.get_text() for t in axis.get_ticklabels()]


def _boxes(ax):
    out = []
    for r, vert in ax.__dict__.get("_sandlot_boxes", []):
        axis = ax.xaxis if vert else ax.yaxis
        locs = list(axis.get_ticklocs())
        names = [t.get_text() for t in axis.get_ticklabels()]
        for i, box in enumerate(r.get("boxes", [])):
            coord = 1 if vert else 0
            if hasattr(box, "get_path"):
                pts = box.get_path().vertices[:, coord]
                pos = box.get_path().vertices[:, 1 - coord]
            else:
                pts = (box.get_ydata() if vert else box.get_xdata())
                pos = (box.get_xdata() if vert else box.get_ydata())
            center = (min(pos) + max(pos)) / 2
            caps = r.get("caps", [])[2 * i : 2 * i + 2]
            ends = [v for c in caps for v in (c.get_ydata() if vert else c.get_xdata())]
            med = r["medians"][i]
            fl = r.get("fliers", [])
            outl = list(fl[i].get_ydata() if vert else fl[i].get_xdata()) if i < len(fl) else []
            label = str(i + 1)
            if locs:
                j = min(range(len(locs)), key=lambda j: abs(locs[j] - center))
                if j < len(names) and names[j]:
                    label = names[j]
            out.append({
                "label": label,
                "min": float(min(ends)) if ends else float(min(pts)),
                "first_quartile": float(min(pts)),
                "median": float((med.get_ydata() if vert else med.get_xdata())[0]),
                "third_quartile": float(max(pts)),
                "max": float(max(ends)) if ends else float(max(pts)),
                "outliers": [float(v) for v in outl],
            })
    return out


def _bars(ax):
    from matplotlib.container import BarContainer

    out = []
    for c in ax.containers:
        if not isinstance(c, BarContainer):
            continue
        horiz = getattr(c, "orientation", None) == "horizontal"
        axis = ax.yaxis if horiz else ax.xaxis
        locs = list(axis.get_ticklocs())
        names = [t.get_text() for t in axis.get_ticklabels()]
        group = c.get_label()
        for rect in c.patches:
            if horiz:
                center, value = rect.get_y() + rect.get_height() / 2, rect.get_width()
            else:
                center, value = rect.get_x() + rect.get_width() / 2, rect.get_height()
            label = None
            if locs:
                j = min(range(len(locs)), key=lambda j: abs(locs[j] - center))
                if abs(locs[j] - center) < 1e-9 + abs(rect.get_width() if not horiz
                                                      else rect.get_height()) / 2:
                    label = names[j] if j < len(names) else None
            out.append({"label": label if label else _value(axis, _scale(axis), center),
                        "value": float(value),
                        "group": group if group and not group.startswith("_") else None})
    return out


def _points(ax, artists, xy):
    out = []
    for a in artists:
        pts = []
        for x, y in xy(a):
            pts.append([_value(ax.xaxis, _scale(ax.xaxis), x),
                        _value(ax.yaxis, _scale(ax.yaxis), y)])
        out.append({"label": a.get_label(), "points": pts})
    return out


def axes_chart(ax):
    """One axes' chart: the first of box plot, pie, bar, line and scatter it holds."""
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Wedge

    title = _text(ax.title)
    boxes = _boxes(ax)
    if boxes:
        return dict(_chart2d("box_and_whisker", ax, title), elements=boxes)
    wedges = [p for p in ax.patches if isinstance(p, Wedge)]
    if wedges:
        return {"type": "pie", "title": title, "elements": [
            {"label": w.get_label(), "angle": round(abs(w.theta2 - w.theta1), 3),
             "radius": float(w.r)} for w in wedges]}
    bars = _bars(ax)
    if bars:
        return dict(_chart2d("bar", ax, title), elements=bars)
    taken = {id(a) for r, _ in ax.__dict__.get("_sandlot_boxes", []) for v in r.values()
             for a in v}
    lines = [l for l in ax.get_lines() if id(l) not in taken]
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    if lines or scatters:
        c = _chart2d("line" if lines else "scatter", ax, title)
        _ticks_part(ax, c)
        if lines:
            c["elements"] = _points(ax, lines, lambda l: l.get_xydata())
        else:
            c["elements"] = _points(ax, scatters, lambda s: s.get_offsets())
        return c
    return {"type": "unknown", "title": title, "elements": []}


def chart(fig):
    """A figure's chart: its one axes' chart, a superchart of several, None for none.
    Colorbars are not charts of their own."""
    fig.canvas.draw()  # tick labels exist once drawn
    axes = [a for a in fig.get_axes() if not hasattr(a, "_colorbar")]
    if not axes:
        return None
    sup = getattr(fig, "_suptitle", None)
    if len(axes) == 1:
        c = axes_chart(axes[0])
        if c.get("title") is None and sup is not None:
            c["title"] = _text(sup)
        return c
    return {"type": "superchart", "title": _text(sup) if sup is not None else None,
            "elements": [axes_chart(a) for a in axes]}
