"""CNN lab: variational training of convolutional networks, small on a CPU, full scale on a GPU."""

import hashlib
import os
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import vilab_ui as ui
from vilab.cnn import data as cdata
from vilab.cnn import devices, models, train
from vilab.plots import cnn_results
from vilab import plots
from vilab.core import Job, Trace, as_key, run_batch
from vilab.plots import cnn as pcnn

ui.page(
    "CNN lab",
    "Train a convolutional network **variationally**, with a Gaussian over every weight, and watch it learn "
    "to read handwritten digits.",
)

info = devices.device_info()
MODEL_NAMES = {"lenet5": "LeNet-5", "lenet5-digits": "LeNet-5 for 8x8 images", "bong-cnn": "BONG paper's CNN",
               "mlp": "MLP (one hidden layer)"}


UPLOAD = "your .npz file"
# one press of Train trains for at most this long, all methods together (a server's owner may change it)
TRAIN_BUDGET_S = float(os.environ.get("VILAB_TRAIN_BUDGET_S", "600"))


DATA_LABELS = {"mnist": "MNIST (28×28)", "digits": "digits (8×8)",
               UPLOAD: "your .npz file"}


DATA_TITLES = {"mnist": "MNIST", "digits": "the digits"}


def data_label(choice: str) -> str:
    return DATA_LABELS.get(choice, choice)


def model_label(name: str) -> str:
    return MODEL_NAMES.get(name, name)


ONLINE_SHORT = (("linearised Hessian", "LH"), ("sampled empirical Fisher", "EF"),
                ("diagonal + low rank (rank 10)", "DLR-10"), ("diagonal", "diag"), ("moment form", "moment"))


def online_short(code: str) -> str:
    """A BONG-family method's name short enough for a chip: "BONG, LH, DLR-10"."""
    name = plots.label(code)
    for long, short in ONLINE_SHORT:
        name = name.replace(long, short)
    return name


@ui.cache_resource(ttl=None)  # the store bounds itself
def finished_store() -> ui.SharedStore:
    """Finished runs keyed by their settings, shared by all sessions of this server (bounded: the 48
    most recent, each kept a day)."""
    return ui.SharedStore(maxsize=48, ttl_s=24 * 3600)


@ui.cache_resource(show_spinner="Loading the data...", max_entries=4)
def load_data(name: str):
    return cdata.load(name)  # cache_resource: MNIST's 200 MB are not copied on every rerun


@ui.cache_resource(show_spinner="Loading the data...", max_entries=4)
def load_folder_file(name: str):
    return cdata.load_from_folder(name)


@ui.cache_resource(show_spinner="Reading your file...", max_entries=4, ttl=3600)
def load_upload(digest: str, filename: str, _raw: bytes):
    return cdata.read_npz(_raw, filename)


@ui.cache_resource(max_entries=8)
def get_model(name: str, shape: tuple):
    return models.build(name, shape)


# ------------------------------------------------------------------------------- settings
avail = cdata.availability()
ctl, fig_col = ui.columns()
with fig_col:
    slot = st.empty()  # the main figure: a message or the last result, live curves while training
with ctl:
    mode = ui.radio("Training", "mode", ["VI (minibatch ELBO)", "online (BONG family)"], "VI (minibatch ELBO)",
                    help="VI: epochs of minibatches with Tan (2025)'s optimizers. Online: one pass over a stream, "
                         "one example per step, with the BONG family of Jones, Chang & Murphy.")
    online = mode.startswith("online")
    folder = cdata.folder_files()
    ds_choice = ui.select("Images", "ds", ["mnist", "digits", UPLOAD, *folder],
                          "mnist" if avail["mnist"] is None else "digits", format_func=data_label,
                          help="MNIST: 60,000 handwritten digits of 28x28 pixels, the papers' data. Digits: 1,797 "
                               "of 8x8 pixels, for quick runs. Your own file: a .npz with the arrays x_train, "
                               "y_train, x_test, y_test."
                               + (" The other files are this server's data folder." if folder else ""))
    ds_name, loader = "digits", lambda: load_data("digits")
    if ds_choice == "mnist":
        if avail["mnist"] is None:
            ds_name, loader = "mnist", lambda: load_data("mnist")
        else:
            st.info(avail["mnist"] + " Showing the digits instead.")
    elif ds_choice == UPLOAD:
        up = st.file_uploader("Your .npz file", type=["npz"], key="npz_upload",
                              max_upload_size=cdata.LIMITS["file_mb"],
                              help="Images (N, H, W), (N, H, W, C) or flat (N, H·W), pixels 0..255 or in [0, 1]; "
                                   "labels 0..K-1. Limits: " + cdata.limits_text() + ".")
        st.caption("Limits: " + cdata.limits_text() + ". The file stays on this server for an hour at most.")
        if up is None:
            st.info("Choose a file; until then the digits are used.")
        else:
            raw = up.getvalue()
            # hashed once per upload, not on every rerun of the page (a 50 MB file costs ~0.1 s)
            seen = f"_npz_digest_{up.file_id}"
            if seen not in st.session_state:
                st.session_state[seen] = hashlib.sha256(raw).hexdigest()
            digest = st.session_state[seen]
            fname = re.sub(r"[^A-Za-z0-9_.-]+", "_", up.name)[-40:]  # shown in titles and tables
            ds_name = f"{fname} ({digest[:8]})"
            loader = lambda: load_upload(digest, fname, raw)  # noqa: E731
    elif ds_choice in folder:
        ds_name, loader = ds_choice, lambda: load_folder_file(ds_choice)

    data_full = None
    with ui.guard("loading the data"):
        data_full = loader()
    if data_full is None:
        st.info("Using the digits instead.")
        data_full, ds_name = load_data("digits"), "digits"
    big = data_full.n_train > 5000  # MNIST-sized: fewer epochs over more images by default
    if not online:
        methods = ui.multiselect("Optimizers", "opts", list(train.VI_OPTIMIZERS), ["snngm"], format_func=plots.label,
                                 help="Natural-gradient optimizers (SNNGM, NAGM, natural-gradient Adam, VOGN) and "
                                      "Euclidean ones (Adam, ProxGenAdam), as in Tan (2025) Table 9.")
        alphas = {m: ui.log_slider(f"Step size α{'₀' if m == 'snngm' else ''} of {plots.label(m)}", f"a_{m}",
                                   1e-4, 1e-1, train.default_vi_alpha(m),
                                   help=("SNNGM takes steps α = α₀ √(2P), P the number of weights. " if m == "snngm"
                                         else "") + f"Default {train.default_vi_alpha(m):g}.")
                  for m in methods}
        epochs = ui.slider("Epochs", "ep", 1, 30 if big else 100, 3 if big else 50,
                           help="One epoch = one pass over the training images used.")
    else:
        methods = ui.multiselect("Methods", "om", list(train.ONLINE_METHODS), ["bong-lin-hess-dlr-10", "bong-mc-ef-diag"],
                                 format_func=online_short,
                                 help="BONG, BLR, BOG, BBB: the four update rules of Jones, Chang & Murphy. LH: "
                                      "linearised Hessian; EF: sampled empirical Fisher; diag: diagonal covariance; "
                                      "DLR-10: diagonal + rank 10.")
        lr = ui.log_slider("Step size α (BLR, BOG, BBB)", "lr", 1e-3, 1.0, 0.1,
                           help="BONG takes one natural-gradient step with α = 1 and needs no step size.")
    b1, b2 = st.columns(2)
    go_btn = b1.button("Train", key="train", type="primary", disabled=not methods)
    stop_btn = b2.button("Stop", key="stop", help="Ends the running training; the epochs done so far are kept.")
    status_slot = st.empty()
    with ui.more("Model and more settings"):
        shape = data_full.shape
        model_names = models.models_for(shape)
        model_name = ui.select("Model", "model", model_names, model_names[0], format_func=model_label)
        net = None
        with ui.guard("building the model"):
            net = get_model(model_name, shape)
        if net is None:
            st.stop()
        n_max = data_full.n_train
        if not online:
            batch = ui.select("Batch size", "bs", [16, 32, 64, 128, 256, 512] if big else [8, 16, 32, 64, 128, 256],
                              64 if big else 32,
                              help="Tan (2025) uses 128 on MNIST's 60,000 images; smaller batches give more steps "
                                   "per epoch (32 on the 1,437 digits, 64 on 10,000 MNIST images by default).")
            lo = min(64, n_max)
            if st.session_state.get("ntr", lo) > n_max:  # a smaller data set than the last one
                st.session_state["ntr"] = n_max
            n_train = (ui.slider("Training examples used", "ntr", lo, n_max, min(n_max, 10000 if big else 1437),
                                 help="All of them is Tan's setting; fewer train faster.") if lo < n_max else n_max)
            st.caption("Step sizes: Tan's defaults for Adam, natural-gradient Adam and ProxGenAdam (0.001); SNNGM "
                       "α₀ = 0.003, NAGM 0.01, VOGN 0.001 (VOGN uses batches of at most 16: it needs per-example "
                       "gradients, as in Tan Sec. 8.3). Prior N(0, 100 I), start C = I/√n.")
        else:
            t_lo = min(10, n_max)
            T = ui.slider("Stream length T", "T", t_lo, min(n_max, 2000), min(200, n_max)) if t_lo < min(n_max, 2000) else n_max
            s02 = ui.log_slider("Prior variance σ₀²", "s02", 1e-3, 1.0, 0.1)
            n_iter = ui.select("Inner iterations I (BLR, BBB)", "I", [1, 10], 1)
            st.caption("The sampled empirical-Fisher methods use M = 10 samples here (the paper: 100); BBB with "
                       "I = 1 is BOG (the KL term vanishes at the start of a step); the paper's MNIST runs use I = 10.")

seed = ui.seed()


def settings_key(method: str) -> tuple:
    if online:
        alg = method.split("-")[0]
        return ("online", ds_name, model_name, method, T, s02, lr if alg != "bong" else None,
                n_iter if alg in ("blr", "bbb") else None, seed)
    return ("vi", ds_name, model_name, method, epochs, batch if method != "vogn" else min(batch, 16), n_train, seed,
            alphas[method])


def run_label(key: tuple) -> str:
    """A unique, readable name of the run with these settings (table, gallery, CSV)."""
    if key[0] == "vi":
        _, ds, model, m, ep, b, n, sd, a = key[:9]
        return f"{plots.label(m)}, α = {a:g} | {model_label(model)} on {n} {ds} | {ep} epochs, batch {b} | seed {sd}"
    _, ds, model, m, T_, s2, a, it, sd = key[:9]
    extra = (f", α = {a:g}" if a is not None else "") + (f", I = {it}" if it is not None else "")
    return f"{plots.label(m)} | {model_label(model)} on {ds} | T = {T_}, σ₀² = {s2:g}{extra} | seed {sd}"


def short_label(key: tuple) -> str:
    """The legend's name of a run: the method and its step size."""
    if key[0] == "vi":
        return f"{plots.label(key[3])}, α = {key[8]:g}"
    return plots.label(key[3]) + (f", α = {key[6]:g}" if key[6] is not None else "")


def summarise_vi(r: Trace, key: tuple) -> dict:
    """What the page keeps of a finished vi_train Trace (plain arrays, cached across reruns)."""
    label = run_label(key)
    pe = train.per_epoch(r)
    mu, sigma = train.vi_posterior(r)
    return dict(kind="vi", label=label, optimizer=r.settings["optimizer"], elbo_epoch=pe["elbo_epoch"],
                test_nlpd=pe["test_nlpd"], test_err=pe["test_err"], test_err_plugin=pe["test_err_plugin"],
                rows=train.vi_rows(r, label), final_elbo=r.extra["final_elbo"],
                final_elbo_se=r.extra["final_elbo_se"], status=r.status,
                examples_per_second=r.timings["examples_per_second"], device=r.extra["device"], mu=mu, sigma=sigma,
                model=model_name, dataset=ds_name, settings=r.settings, short=short_label(key))


ONLINE_METRICS = ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin", "err_mc", "err_lin")


def online_metrics(r: Trace) -> dict:
    return {k: np.asarray(r.extra[k]) for k in ONLINE_METRICS if k in r.extra}


def summarise_online(r: Trace, key: tuple) -> dict:
    """What the page keeps of a finished online_train Trace (one row per checkpoint)."""
    label = run_label(key)
    metrics = online_metrics(r)
    rows = [dict(run=label, t=int(t), **{k: float(v[i]) for k, v in metrics.items()}) for i, t in enumerate(r.iterations)]
    return dict(kind="online", label=label, optimizer=r.settings["name"],
                checkpoints=np.asarray(r.iterations), metrics=metrics, rows=rows, status=r.status,
                examples_per_second=r.timings["examples_per_second"], device=r.extra["device"],
                belief=r.state.belief, model=model_name, dataset=ds_name, settings=r.settings, short=short_label(key))


@ui.cache_data(max_entries=16)
def gallery_probs(run_key: tuple, _net, _run: dict, _X, seed: int):
    """Predictive probabilities (20 draws from q) of the gallery's test images for one finished run."""
    if _run["kind"] == "vi":
        probs = train.predictive(_net, _run["mu"], _run["sigma"], _X, n_samples=20, key=as_key(seed))
    else:
        probs = train.online_predictive(_net, _run["belief"], _X, n_samples=20, key=as_key(seed))
    return probs, train.predictive_entropy(probs)


def show_run(key) -> None:
    if key not in st.session_state["cnn_shown"]:
        st.session_state["cnn_shown"].append(key)


def legend_runs(runs: list[dict]) -> list[dict]:
    """The runs named by their short label in legends, or by their full label when two share one."""
    names = [r.get("short", r["label"]) for r in runs]
    dup = len(set(names)) < len(names)
    return [dict(r, label=r["label"] if dup else r.get("short", r["label"])) for r in runs]


START_MESSAGE = ("Press <b>Train</b>: the test error and the ELBO<br>of every epoch appear here. The first run<br>"
                 "compiles the network (10-20 s on a CPU), then trains.")


LIVE_IMAGES = 6


def live_gallery(run: dict, n_epochs: int):
    """The first test images with the predictive of the network as trained so far (during training)."""
    X, y = data_full.x_test[:LIVE_IMAGES], data_full.y_test[:LIVE_IMAGES]
    probs = train.predictive(net, run["mu"], run["sigma"], X, n_samples=20, key=as_key(seed))
    fig = pcnn.digit_gallery(X, probs, y, n_cols=LIVE_IMAGES, entropies=train.predictive_entropy(probs),
                             compact=True, title=f"After epoch {n_epochs}: predicted digit (probability), "
                                                 "uncertainty H; red: wrong")
    return fig


DATA_NAME, N_CLASSES = data_full.name, data_full.n_classes


def main_figure(runs: list[dict], title: str | None = None):
    """The page's main figure: learning curves (VI) or test metrics along the stream (online). It reads the data
    set's name and class count (DATA_NAME, N_CLASSES), not the data set: a recipe fingerprints what it reads."""
    if not online:
        return pcnn.learning_curves(legend_runs(runs), epochs=epochs, n_classes=N_CLASSES,
                                    title=title or f"Learning curves on {DATA_TITLES.get(DATA_NAME, 'the ' + DATA_NAME)} "
                                                            "(test images)",
                                    message=START_MESSAGE)
    fig = pcnn.online_curves(legend_runs(runs), metrics=("err_plugin", "nlpd_plugin"), height=420,
                             title=title or "Online training: test metrics against examples seen")
    fig.layout.annotations = []  # the panels' titles go on their y axes, clear of the legend
    fig.update_yaxes(title_text="test error (plug-in)", row=1, col=1)
    fig.update_yaxes(title_text="test NLPD (plug-in)", row=1, col=2)
    if not runs:
        for c in (1, 2):
            fig.add_trace(go.Scatter(x=[], y=[], showlegend=False, hoverinfo="skip"), row=1, col=c)
        fig.update_xaxes(range=[0, T])
        fig.update_yaxes(range=[0, 1], row=1, col=1)
        fig.update_yaxes(showticklabels=False, zeroline=False, row=1, col=2)
        fig.add_annotation(text="Press <b>Train</b>: the test error and NLPD<br>along the stream appear here.",
                           xref="paper", yref="paper", x=0.5, y=0.45, showarrow=False, align="center",
                           bgcolor="rgba(255,255,255,0.92)", bordercolor="#999999", borderwidth=1, borderpad=8)
    return fig



store = finished_store()
if "cnn_shown" not in st.session_state:
    st.session_state["cnn_shown"] = []
if not st.session_state["cnn_shown"] and methods:  # a new visitor: the current settings' runs finished on this server
    st.session_state["cnn_shown"] = [settings_key(m) for m in methods if settings_key(m) in store]
was_running = st.session_state.pop("cnn_running", None)  # set while a run trains: still set if Stop interrupted it
if stop_btn:
    if was_running is not None:
        status_slot.info(f"Stopped {plots.label(was_running[3])}. The epochs it finished and the runs done before "
                         "are kept below.")
    else:
        status_slot.info("No training was running.")

def train_job(m, data_run, bar, cut) -> Job:
    """The batch's job of method ``m``: its finished run with these settings from the store, else trained now
    within what is left of the budget (``progress`` and ``max_time`` from the batch), drawn live and kept in the
    store; ``cut[m]`` says how far a run cut short by the budget got."""
    lab = plots.label(m)

    def fit(progress, max_time, **_):
        key = settings_key(m)
        if key in store:  # finished before with the same settings: reuse
            st.session_state["cnn_shown"] = [k for k in st.session_state["cnn_shown"] if k != key] + [key]
            return store[key]
        partial_key = key + ("partial",)
        st.session_state["cnn_running"] = key
        i = methods.index(m)
        bar.progress(i / len(methods), text=f"{lab}: compiling the network's training step (10-20 s on a CPU the "
                                            "first time these shapes are used), then training...")

        try:
            if not online:
                def on_epoch(partial):
                    s = summarise_vi(partial, partial_key)
                    n_ep = len(s["elbo_epoch"])
                    s["label"] += f" (stopped after epoch {n_ep})"
                    s["rows"] = [dict(row, run=s["label"]) for row in s["rows"]]
                    s["status"] = "stopped"
                    store[key] = s  # kept if the Stop button interrupts the run
                    show_run(key)
                    now = [store[k] for k in st.session_state["cnn_shown"] if k in store and store[k]["kind"] == "vi"]
                    with slot.container():  # each epoch's charts replace the previous ones
                        ui.show(main_figure([dict(r, short=r["short"] + (" (running)" if r is s else "")) for r in now],
                                            title="Learning curves (live)"), key=f"live-{m}-{n_ep}")
                        ui.show(live_gallery(s, n_ep), key=f"live-digits-{m}-{n_ep}")

                b = key[5]  # the batch size (VOGN: at most 16)
                r = train.vi_train(net, data_run, m, key=as_key(seed), alpha=alphas[m], epochs=epochs, batch_size=b,
                                   progress=progress, on_chunk=on_epoch, eval_samples=10, elbo_draws=10, max_time=max_time)
                if r.status == "max_time":  # shown as far as it got (on_epoch kept it), not as finished
                    cut[m] = f"{lab} (stopped after {len(train.per_epoch(r)['elbo_epoch'])} of {epochs} epochs)"
                else:
                    store[key] = summarise_vi(r, key)
            else:
                drawn = [-1]

                def on_chunk(so_far):
                    if so_far.n_rows == drawn[0]:  # redraw only when a checkpoint was added
                        return
                    drawn[0] = so_far.n_rows
                    done = [store[k] for k in st.session_state["cnn_shown"] if k in store and store[k]["kind"] == "online"]
                    running = dict(label=f"{run_label(key)} (running)", short=f"{short_label(key)} (running)",
                                   optimizer=m, checkpoints=np.asarray(so_far.iterations), metrics=online_metrics(so_far))
                    with slot.container():  # each checkpoint's chart replaces the previous one
                        ui.show(main_figure(done + [running], title="Test metrics against examples seen (live)"),
                                key=f"live-{m}-{so_far.n_rows}")

                alg = m.split("-")[0]
                r = train.online_train(net, data_run, m, key=as_key(seed), T=T, sigma0_2=s02,
                                       alpha=None if alg == "bong" else lr,
                                       n_iter=n_iter if alg in ("blr", "bbb") else 1, n_checkpoints=8,
                                       n_test=min(500, len(data_run.y_test)), n_mc=20, progress=progress,
                                       on_chunk=on_chunk, max_time=max_time)
                if r.status == "max_time":  # shown as far as it got, not as finished
                    s = summarise_online(r, key)
                    s["label"] += f" (stopped at t = {r.n_steps})"
                    s["rows"] = [dict(row, run=s["label"]) for row in s["rows"]]
                    store[partial_key] = s
                    show_run(partial_key)
                    cut[m] = f"{lab} (stopped at t = {r.n_steps})"
                else:
                    store[key] = summarise_online(r, key)
            if key in store:
                store.pop(partial_key, None)
                st.session_state["cnn_shown"] = [k for k in st.session_state["cnn_shown"] if k != partial_key]
                show_run(key)
            return r
        finally:
            st.session_state.pop("cnn_running", None)

    return Job.of(m, fit)


def train_progress(bar):
    """The batch's progress on ``bar``, while a run trains (a finished run reused draws nothing)."""
    def show(p):
        if st.session_state.get("cnn_running") == settings_key(p.name):
            what = f"{epochs} epochs" if not online else f"the stream of {T} examples"
            bar.progress(p.fraction, text=f"Training {plots.label(p.name)}: {100 * p.job_fraction:.0f}% of {what}")
    return show


if go_btn and methods:
    data_run = data_full.subset(n_train if not online else None, None if online else min(len(data_full.y_test), 2000))
    bar = status_slot.progress(0.0, text="Starting...")
    cut = {}  # method -> how far a run cut short by the budget got
    out = run_batch([train_job(m, data_run, bar, cut) for m in methods], progress=train_progress(bar),
                    time_budget_s=TRAIN_BUDGET_S)
    for m in out.errors:  # a method that failed warns; the others are kept
        with ui.guard(f"training {plots.label(m)}"):
            out.trace(m)
    skipped = [cut[m] if m in cut else plots.label(m) for m in methods if m in cut or m in out.not_run]
    bar.progress(1.0, text="Done: " + ", ".join(plots.label(m) for m in methods) + ".")
    if skipped:
        status_slot.warning(f"One press of Train trains for at most {TRAIN_BUDGET_S:g} seconds; cut short or not run: "
                            + "; ".join(skipped) + ". Choose fewer methods, epochs or examples.")

# ---------------------------------------------------------------------------------- results
shown = [store[k] for k in st.session_state["cnn_shown"] if k in store]
vi_runs = [r for r in shown if r["kind"] == "vi"]
on_runs = [r for r in shown if r["kind"] == "online"]
mode_runs = on_runs if online else vi_runs
with slot.container():
    ui.show(ui.recipe(main_figure, mode_runs), key="curves", main=True)
with fig_col:
    if not mode_runs:
        ui.notice("The curves show the test error of the trained network after every epoch, and while it "
                  "trains, a few test digits with what the network predicts for them. Chance level is "
                  f"{1 - 1 / data_full.n_classes:.2f} ({data_full.n_classes} classes); "
                  + ("the default run on MNIST (SNNGM, 10,000 images, 3 epochs) ends near 0.06 in about a minute "
                     "on a two-core CPU." if big else
                     "the default run on the digits (SNNGM, 50 epochs) ends near 0.1 in 15 to 30 seconds on a "
                     "two-core CPU.") if not online else
                  "One pass over the stream, one image per step: the test error and NLPD of the plug-in "
                  "predictive (at the mean weights) are measured at 8 checkpoints.")
    elif not online:
        ends = "; ".join(f"{r['short']}: {r['test_err'][0]:.2f} → {r['test_err'][-1]:.2f} after "
                         f"{len(r['test_err']) - 1} epochs" for r in vi_runs)
        ui.notice(f"Test error at the start → at the end: {ends} (chance level {1 - 1 / data_full.n_classes:.2f}). "
                  "The error is that of the predictive that averages the network's output over 10 draws of the "
                  "weights from q, so a network whose weights are still very uncertain predicts badly. SNNGM "
                  "follows the natural gradient, which scales each weight's step by its posterior variance: "
                  "weights the data say little about move fast. Adam moves every weight by about the same step; "
                  "with Tan's step size 0.001 it was still above 0.7 after 60 epochs in our runs on the digits "
                  "(add it to compare).")
    else:
        ends = "; ".join(f"{r['short']}: error {r['metrics']['err_plugin'][-1]:.2f}, NLPD "
                         f"{r['metrics']['nlpd_plugin'][-1]:.2f}" for r in on_runs if "err_plugin" in r["metrics"])
        ui.notice(f"At the end of the stream: {ends}. Lower is better for both. BONG takes one natural-gradient step "
                  "per image (no step size); a lower NLPD than the diagonal methods' shows what a richer covariance "
                  "buys.")
    st.caption(f"{model_label(net.name)}: {net.n_params:,} weights ({' + '.join(f'{k} {v:,}' for k, v in net.layers)}); "
               f"{ui.plain(data_full.name)}: {data_full.n_train:,} training / {len(data_full.y_test):,} test images "
               f"{shape}. Device: {devices.device_label()}"
               + (f"; each minibatch is split over the {info['count']} devices." if info["count"] > 1 else "."))


def _rounded(df: pd.DataFrame) -> pd.DataFrame:
    """The float columns as text with 4 significant digits (thousands without decimals)."""
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            out[c] = [_fmt(x, ",.0f") if abs(x) >= 1000 else _fmt(x, ".4g") for x in out[c]]
    return out


def _fmt(x, spec: str) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    return format(x, spec) if np.isfinite(x) else "–"


if shown:
    st.subheader("Finished runs")
    for r in shown:
        ui.report_status(r["status"], r["label"])
    table = pd.DataFrame([{
        "run": r.get("short", r["label"]),
        "test error": _fmt(r["test_err"][-1] if r["kind"] == "vi" else r["metrics"]["err_plugin"][-1], ".3f"),
        "test NLPD": _fmt(r["test_nlpd"][-1] if r["kind"] == "vi" else r["metrics"]["nlpd_plugin"][-1], ".3f"),
        "final ELBO (MC, full train)": _fmt(r.get("final_elbo", np.nan), ",.0f"),
        "status": ui.status_text(r["status"]), "examples/s": _fmt(r["examples_per_second"], ",.0f"),
        "settings": r["label"].split(" | ", 1)[-1], "device": r["device"]} for r in shown])
    ui.table(table, hide_index=True, width="stretch")
    st.caption("VI: ELBO and test metrics of the Monte Carlo predictive (10 draws). Online: plug-in predictive at t = T.")
    c1, c2 = st.columns(2)
    csv = pd.DataFrame([row for r in shown for row in r["rows"]]).to_csv(index=False)
    c1.download_button("Download all runs (CSV)", csv, file_name="cnn_lab_runs.csv", mime="text/csv", key="csv")
    if c2.button("Clear the comparison", key="clear"):
        st.session_state["cnn_shown"] = []
        st.rerun()
    c1, c2 = st.columns(2)
    with c1:
        if vi_runs:
            ui.show(ui.recipe(pcnn.metric_curves, legend_runs(vi_runs), "test_nlpd",
                              "Test NLPD (probabilities averaged over 10 draws)"), key="nlpd")
    with c2:
        ui.show(ui.recipe(pcnn.speed_bars, [r.get("short", r["label"]) for r in shown], [r["examples_per_second"] for r in shown],
                          f"Training speed on {devices.device_label()}", codes=[r["optimizer"] for r in shown]),
                key="speed")
    if on_runs and not online:
        ui.show(ui.recipe(pcnn.online_curves, legend_runs(on_runs)), key="online")
    if vi_runs and online:
        ui.show(ui.recipe(pcnn.learning_curves, legend_runs(vi_runs), n_classes=data_full.n_classes), key="vi-curves")

    # ------------------------------------------------------------------------ gallery
    st.subheader("What the trained network says about test images")
    usable = [k for k in st.session_state["cnn_shown"]
              if k in store and store[k]["model"] == model_name and store[k]["dataset"] == ds_name]
    if not usable:
        st.info("The gallery uses runs of the model and data set selected in the settings.")
    else:
        labels = {store[k]["label"]: k for k in usable}
        pick = ui.select("Run", "gal", list(labels), store[usable[-1]]["label"])
        run_key = labels[pick]
        n_show = min(12, len(data_full.y_test))
        with ui.guard("computing predictive probabilities"):
            Xte, yte = data_full.x_test[:500], data_full.y_test[:500]
            probs, H = gallery_probs(run_key, net, store[run_key], Xte, seed)
            worst = np.argsort(-H)[:n_show]
            ui.show(ui.recipe(pcnn.digit_gallery, Xte[worst], probs[worst], yte[worst], entropies=H[worst],
                              title="Most uncertain test images (highest predictive entropy)"), key="uncertain")
            wrong = np.argmax(probs, 1) != yte
            ui.notice("Each image is titled with the predicted class, its probability and the true class; red: "
                      "misclassified. The probabilities p average the softmax over 20 draws of the weights from q, "
                      "and the predictive entropy H = −Σₖ pₖ log pₖ (nats, at most log 10 = 2.30) measures "
                      "the uncertainty. A well-calibrated network is unsure where it errs: mean entropy "
                      f"{H[~wrong].mean():.2f} nats on the correctly classified images"
                      + (f", {H[wrong].mean():.2f} nats on the misclassified ones." if wrong.any()
                         else "; no test image is misclassified."))
            ui.show(ui.recipe(pcnn.digit_gallery, Xte[:n_show], probs[:n_show], yte[:n_show], entropies=H[:n_show],
                              title="The first test images"), key="gallery")
            c1, c2 = st.columns([1, 2])
            with c1:
                j = ui.slider("Probabilities of the k-th most uncertain image", "img", 1, n_show, 1) if n_show > 1 else 1
            w = worst[j - 1]
            with c2:
                ui.show(ui.recipe(pcnn.probability_bars, probs[w], yte[w], title=f"Uncertain image no. {j}: true class "
                                  f"{int(yte[w])} (red), H = {H[w]:.2f}"), key="probs")

@ui.explain()
def equations():
    st.markdown(
        "Every weight θ of the network gets a Gaussian q(θ), and training maximises the evidence lower bound "
        "(ELBO). Two ways: minibatch ELBO with the optimizers of Tan (2025) (Adam, natural-gradient Adam, SNNGM, "
        "NAGM, ProxGenAdam, VOGN; diagonal covariance, as in Tan's LeNet-5 experiment, Table 9), or one pass over "
        "a stream with the BONG family of Jones, Chang & Murphy (their 57,722-weight CNN, Figs 1-2). On a CPU "
        "the runs here use part of MNIST (or the 8x8 digits); the papers' full-scale settings run with the same "
        "code on a GPU or a cluster (recorded runs at the bottom of the page)."
    )
    st.latex(r"\mathcal L(\lambda)=\mathbb E_{q_\lambda}\Big[\tfrac{n}{|B|}\sum_{i\in B}\log p(y_i\mid\theta)"
             r"+\log p(\theta)-\log q_\lambda(\theta)\Big]")
    st.latex(r"q_\lambda=\mathcal N(\mu,\operatorname{diag}(c)^2)")
    st.markdown("One draw θ = μ + c ⊙ z, z ~ N(0, I), estimates the gradient on a minibatch B of the n training "
                "images (Tan 2025, Thm 2). The online methods update the belief ψ once per example (BONG, Jones, "
                "Chang & Murphy Eq. 3):")
    st.latex(r"\psi_t = \psi_{t|t-1} + \tilde\nabla_{\psi_{t|t-1}} \mathbb{E}_{q_{\psi_{t|t-1}}}\big[\log p(y_t\mid "
             r"f(x_t,\theta))\big]")
    st.markdown("ProxGenAdam as Tan specifies it (no bias correction) takes proximal steps γ = α/√v_t that are huge "
                "while v_t is small, so its first steps inflate the standard deviations of weights with small "
                "gradients and its ELBO starts far below the others' (it is also last in Tan's Table 9). The "
                "defaults (SNNGM; on MNIST 10,000 images, batch 64, 3 epochs; on the digits batch 32, 50 epochs) "
                "reach a test error near 0.06 (MNIST) or 0.1 (digits) in about a minute or half a minute on a "
                "2-core CPU; Tan's MNIST runs use all 60,000 images, batch 128 and 300 epochs.")


# -------------------------------------------------------------------- recorded results
st.subheader("The papers' experiments, recorded")
st.markdown(
    "Tan (2025) Table 9 (MNIST row): LeNet-5, 61,706 weights, diagonal Gaussian, batch 128, 300 epochs "
    "(VOGN: batch 8, 7 epochs); paper: Adam -50535, PGA -82010, NAdam -50786, SNNGM -42936, NAGM -49113, "
    "VOGN -49247. Jones, Chang & Murphy Figs 1-2: the 57,722-weight CNN on the first T = 2000 MNIST examples. "
    "The script `scripts/cnn_full_scale.py` runs both with this code and records its settings, the device and "
    "the date; on a CPU it runs them at a reduced scale, which each record states."
)


@ui.cache_data(max_entries=16)
def recorded_figures(file: str, version: float):
    """The figures of one recorded experiment, as dicts: built once per version of its file (then redrawn
    in milliseconds). Tan: (ELBO, test error or None); BONG: one per group of methods."""
    res = next(r for r in cnn_results.recorded() if r["file"] == file)
    if res["kind"] == "tan":
        curves = cnn_results.tan_curves(res)
        kept, _ = cnn_results.on_one_scale(curves)
        return (pcnn.elbo_curves(kept, title="Average ELBO per epoch (Tan Fig. 8 style)").to_dict(),
                pcnn.metric_curves(curves, "test_err", "Test error per epoch (MC predictive)", ylabel="test error"
                                   ).to_dict() if all(len(c["test_err"]) for c in curves) else None)
    return tuple(pcnn.online_curves(group, title=title).to_dict() for title, group in cnn_results.bong_figures(res))


def _version(res: dict) -> float:
    try:
        return (cnn_results.assets_dir() / res["file"]).stat().st_mtime
    except OSError:
        return 0.0


def _record_tab(res: dict) -> str:
    """A record's tab: the experiment, and where and at what scale it ran (stated before it is opened)."""
    name = "Tan (2025) Table 9" if res["kind"] == "tan" else "BONG Figs 1-2"
    gpu = res.get("device_info", {}).get("platform") == "gpu"
    return f"{name}: {'GPU' if gpu else 'CPU'}, " + ("the paper's scale" if res["full"] else "reduced scale")


recs = []
with ui.guard("reading the recorded results"):
    recs = cnn_results.recorded()
if not any(r.get("device_info", {}).get("platform") == "gpu" for r in recs):
    st.info("No GPU run has been made yet, so there are no results at the papers' scale to show (none are "
            "invented)" + (": the records below were made on a CPU at a reduced scale. " if recs else ". ")
            + "On a machine with a GPU: `pip install -e '.[gpu]'`, then `python scripts/cnn_full_scale.py`.")
# one tab per record, only the open one drawn (a new visitor's first load draws the main figure, not every record's)
rec_labels = ["Orderings on the digits"]
for res in recs:
    lab = _record_tab(res)
    rec_labels.append(lab if lab not in rec_labels else f"{lab} ({len(rec_labels)})")
rec_tabs = ui.tabs(rec_labels, "rec")
with rec_tabs[0]:
    if rec_tabs[0].open:
        st.markdown(
            "**Do the papers' orderings hold on the digits?** A scaled-down analogue, not the papers' MNIST runs: "
            "averaged over 3 seeds, does SNNGM end with a higher ELBO than Adam (Tan Table 9), and does "
            f"{plots.label('bong-lin-hess-dlr-10')} reach a lower test NLPD than {plots.label('bong-mc-ef-diag')} "
            "(BONG Figs 1-2)? The outcome is shown whichever way it goes.")
        with ui.guard("reading the recorded reproduction"):
            rec = cnn_results.ordering()
            if rec is None:
                st.info("Not recorded yet: `python scripts/cnn_full_scale.py --only digits` (or `vilab repro "
                        "cnn-digits-ordering`, about 3 minutes on a CPU) runs it.")
            else:
                st.caption(f"Recorded {rec['date']} on {rec['device']} by `{rec['script']}`.")
                rows = cnn_results.ordering_rows(rec)
                ui.table(_rounded(pd.DataFrame(rows)), hide_index=True, width="stretch")
                for c in rows:
                    if not c["holds"]:
                        st.warning(f"The paper's direction does NOT hold here: {c['quantity']}. {c['note']}")
for i, (tab, res) in enumerate(zip(rec_tabs[1:], recs)):
    with tab:
        if not tab.open:
            continue
        with ui.guard(f"showing {res['file']}"):
            st.markdown(f"**{res['experiment']}**: {res['device']}, {res['date'][:10]}, `{res['script']}`")
            notes = cnn_results.scale_notes(res)
            if notes:
                st.info("Reduced scale, so the numbers are not the paper's: " + "; ".join(notes) + ".")
            else:
                st.caption("At the paper's setting.")
            if res["kind"] == "tan":
                ui.table(_rounded(pd.DataFrame(cnn_results.tan_rows(res))), hide_index=True, width="stretch")
                curves = cnn_results.tan_curves(res)
                elbo_fig, err_fig = recorded_figures(res["file"], _version(res))
                c1, c2 = st.columns(2)
                with c1:
                    _, far = cnn_results.on_one_scale(curves)
                    ui.show(ui.recipe(plots.figure, elbo_fig), key=f"tan-elbo-{i}")
                    for c in far:
                        st.caption(f"{c['label']} is left out of this chart: its ELBO (down to "
                                   f"{np.nanmin(c['elbo_epoch']):.3g}) would flatten the others into one line. "
                                   "The table has its values.")
                with c2:
                    if err_fig is not None:
                        ui.show(ui.recipe(plots.figure, err_fig), key=f"tan-err-{i}")
                text = cnn_results.tan_notice(res)
            else:
                ui.table(_rounded(pd.DataFrame(cnn_results.bong_rows(res))), hide_index=True, width="stretch")
                for j, fig in enumerate(recorded_figures(res["file"], _version(res))):
                    ui.show(ui.recipe(plots.figure, fig), key=f"bong-fig-{i}-{j}")
                text = cnn_results.bong_notice(res)
            if text:
                ui.notice(text)
            with st.expander("Every setting of this run"):
                st.json(res["settings"], expanded=True)
