"""CNN lab: variational training of convolutional networks, small on a CPU, full scale on a GPU."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab.cnn import data as cdata
from vilab.cnn import devices, models, results, train
from vilab.core import Trace, as_key
from vilab.plots import cnn as pcnn

ui.page(
    "CNN lab",
    "Train a convolutional network **variationally**: a Gaussian over every weight. Two ways: "
    "minibatch ELBO with the optimizers of Tan (2025) (Adam, NAdam, SNNGM, NAGM, ProxGenAdam, VOGN; "
    "diagonal covariance, as in Tan's LeNet-5 experiment, Table 9), or one pass over a stream with the "
    "BONG family of Jones, Chang & Murphy (their 57,722-parameter CNN, Figs 1-2). On this CPU the runs "
    "are small (8x8 digits, a few epochs); the papers' full-scale settings run with the same code on a GPU "
    "(`scripts/cnn_full_scale.py`, results at the bottom of the page).",
)

info = devices.device_info()
st.caption(f"Device: {devices.device_label()}"
           + (f"; each minibatch is split over the {info['count']} devices." if info["count"] > 1 else "."))


@st.cache_resource(show_spinner=False)
def finished_store() -> dict:
    """Finished runs keyed by their settings, shared by all sessions of this server."""
    return {}


@st.cache_resource(show_spinner="Loading the data...")
def load_data(name: str):
    return cdata.load(name)  # cache_resource: MNIST's 200 MB are not copied on every rerun


@st.cache_resource(show_spinner=False)
def get_model(name: str, shape: tuple):
    return models.build(name, shape)


# ------------------------------------------------------------------------------- settings
avail = cdata.availability()
c1, c2, c3 = st.columns(3)
with c1:
    ds_choice = ui.select("Data set", "ds", ["digits", "mnist", "local .npz"], "digits")
ds_name = "digits"
if ds_choice == "mnist":
    if avail["mnist"] is None:
        ds_name = "mnist"
    else:
        st.info(avail["mnist"] + " Showing the digits instead.")
elif ds_choice == "local .npz":
    path = ui.text("Path of a .npz with x_train, y_train, x_test, y_test", "npz", "")
    if path:
        ds_name = path
    else:
        st.info("Type the path of a local .npz file; until then the digits are used.")

data_full = None
with ui.guard("loading the data"):
    data_full = load_data(ds_name)
if data_full is None:
    st.info("Using the digits instead.")
    data_full, ds_name = load_data("digits"), "digits"
shape = data_full.shape
with c2:
    mode = ui.radio("Training", "mode", ["VI (minibatch ELBO)", "online (BONG family)"], "VI (minibatch ELBO)")
with c3:
    model_names = models.models_for(shape)
    model_name = ui.select("Model", "model", model_names, model_names[0])

net = None
with ui.guard("building the model"):
    net = get_model(model_name, shape)
if net is None:
    st.stop()
st.markdown(
    f"**{net.name}**: {net.n_params:,} weights ({' + '.join(f'{k} {v:,}' for k, v in net.layers)}); "
    f"{data_full.name}: {data_full.n_train:,} training / {len(data_full.y_test):,} test images {shape}."
)

seed = ui.seed()
online = mode.startswith("online")
n_max = data_full.n_train
with ui.more("Run settings"):
    if not online:
        methods = ui.multiselect("Optimizers", "opts", list(train.VI_OPTIMIZERS), ["adam", "snngm"])
        c1, c2, c3 = st.columns(3)
        with c1:
            epochs = ui.slider("Epochs", "ep", 1, 50, 3)
        with c2:
            batch = ui.select("Batch size", "bs", [8, 16, 32, 64, 128, 256], 32)
        with c3:
            lo = min(64, n_max)
            if st.session_state.get("ntr", lo) > n_max:  # a smaller data set than the last one
                st.session_state["ntr"] = n_max
            n_train = ui.slider("Training examples used", "ntr", lo, n_max, min(n_max, 1437)) if lo < n_max else n_max
        st.caption("Step sizes: Tan's defaults for Adam, NAdam and ProxGenAdam (0.001); SNNGM alpha0 = 0.003 "
                   "(alpha = alpha0 sqrt(2P)), NAGM 0.01, VOGN 0.001 (VOGN uses batches of at most 16: it needs "
                   "per-example gradients, as in Tan Sec. 8.3). Prior N(0, 100 I), start C = I/sqrt(n). "
                   "ProxGenAdam as Tan specifies it (no bias correction) takes proximal steps "
                   "gamma = alpha / sqrt(v_t) that are huge while v_t is small, so its first steps inflate the "
                   "standard deviations of weights with small gradients and its ELBO starts far below the others' "
                   "(it is also last in Tan's Table 9).")
    else:
        methods = ui.multiselect("Methods", "om", list(train.ONLINE_METHODS), ["bong-lin-hess-dlr-10", "bong-mc-ef-diag"])
        c1, c2, c3, c4 = st.columns(4)
        with c1:
            t_lo = min(10, n_max)
            T = ui.slider("Stream length T", "T", t_lo, min(n_max, 2000), min(200, n_max)) if t_lo < min(n_max, 2000) else n_max
        with c2:
            s02 = ui.log_slider("Prior variance sigma0^2", "s02", 1e-3, 1.0, 0.1)
        with c3:
            lr = ui.log_slider("alpha (blr, bog, bbb)", "lr", 1e-3, 1.0, 0.1)
        with c4:
            n_iter = ui.select("Inner iterations I (blr, bbb)", "I", [1, 10], 1)
        st.caption("bong takes one natural-gradient step with alpha = 1 and needs no learning rate; mc-ef uses "
                   "M = 10 samples here (the paper: 100); bbb with I = 1 is bog (the KL term vanishes at the "
                   "start of a step), the paper's MNIST runs use I = 10.")

if online:
    st.latex(r"\psi_t = \psi_{t|t-1} + \tilde\nabla_{\psi_{t|t-1}} \mathbb{E}_{q_{\psi_{t|t-1}}}\big[\log p(y_t\mid f(x_t,\theta))\big]"
             r"\quad\text{(BONG, Jones, Chang \& Murphy Eq. 3)}")
else:
    st.latex(r"\mathcal L(\lambda)=\mathbb E_{q_\lambda}\Big[\tfrac{n}{|B|}\sum_{i\in B}\log p(y_i\mid\theta)"
             r"+\log p(\theta)-\log q_\lambda(\theta)\Big]")
    st.latex(r"q_\lambda=\mathcal N(\mu,\operatorname{diag}(c)^2)\qquad\text{(Tan 2025, Sec. 8.3)}")


def settings_key(method: str) -> tuple:
    if online:
        alg = method.split("-")[0]
        return ("online", ds_name, model_name, method, T, s02, lr if alg != "bong" else None,
                n_iter if alg in ("blr", "bbb") else None, seed)
    return ("vi", ds_name, model_name, method, epochs, batch if method != "vogn" else min(batch, 16), n_train, seed)


def run_label(key: tuple) -> str:
    """A unique, readable name of the run with these settings (table, legends, CSV)."""
    if key[0] == "vi":
        _, ds, model, m, ep, b, n, sd = key[:8]
        return f"{m} | {model} on {n} {ds} | {ep} ep, batch {b} | seed {sd}"
    _, ds, model, m, T_, s2, a, it, sd = key[:9]
    extra = (f", alpha {a:g}" if a is not None else "") + (f", I {it}" if it is not None else "")
    return f"{m} | {model} on {ds} | T {T_}, sigma0^2 {s2:g}{extra} | seed {sd}"


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
                model=model_name, dataset=ds_name, settings=r.settings)


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
                belief=r.state.belief, model=model_name, dataset=ds_name, settings=r.settings)


@st.cache_data(show_spinner=False, max_entries=16)
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


store = finished_store()
if "cnn_shown" not in st.session_state:
    st.session_state["cnn_shown"] = []

b1, b2 = st.columns([1, 1])
go_btn = b1.button("Train", key="train", type="primary", disabled=not methods)
stop_btn = b2.button("Stop", key="stop", help="Ends the running training; the epochs done so far are kept.")
if stop_btn:
    st.info("Stopped. The runs finished so far, and the epochs done by the interrupted one, are kept below.")

if go_btn and methods:
    data_run = data_full.subset(n_train if not online else None, None if online else min(len(data_full.y_test), 2000))
    bar = st.progress(0.0, text="compiling...")
    live = st.empty()
    for i, m in enumerate(methods):
        key = settings_key(m)
        if key in store:  # finished before with the same settings: reuse
            st.session_state["cnn_shown"] = [k for k in st.session_state["cnn_shown"] if k != key] + [key]
            continue
        partial_key = key + ("partial",)

        def prog(f, i=i, m=m):
            bar.progress(min(1.0, (i + float(f)) / len(methods)), text=f"{m}: {100 * float(f):.0f}%")

        with ui.guard(f"training {m}"):
            if not online:
                def on_epoch(partial, key=partial_key, m=m):
                    s = summarise_vi(partial, key)
                    n_ep = len(s["elbo_epoch"])
                    s["label"] += f" (stopped after epoch {n_ep})"
                    s["rows"] = [dict(row, run=s["label"]) for row in s["rows"]]
                    s["status"] = "stopped"
                    store[key] = s  # kept if the Stop button interrupts the run
                    show_run(key)
                    now = [store[k] for k in st.session_state["cnn_shown"] if k in store and store[k]["kind"] == "vi"]
                    with live:  # st.empty: each epoch's chart replaces the previous one
                        ui.show(pcnn.elbo_curves(now, title="Average ELBO per epoch (live)"), key=f"live-{m}-{n_ep}")

                b = key[5]  # the batch size (VOGN: at most 16)
                r = train.vi_train(net, data_run, m, key=as_key(seed), epochs=epochs, batch_size=b, progress=prog,
                                   on_chunk=on_epoch, eval_samples=10, elbo_draws=10)
                store[key] = summarise_vi(r, key)
            else:
                drawn = [-1]

                def on_chunk(so_far, m=m, drawn=drawn):
                    if so_far.n_rows == drawn[0]:  # redraw only when a checkpoint was added
                        return
                    drawn[0] = so_far.n_rows
                    done = [store[k] for k in st.session_state["cnn_shown"] if k in store and store[k]["kind"] == "online"]
                    running = dict(label=f"{m} (running)", checkpoints=np.asarray(so_far.iterations),
                                   metrics=online_metrics(so_far))
                    with live:  # st.empty: each checkpoint's chart replaces the previous one
                        ui.show(pcnn.online_curves(done + [running], title="Test metrics against examples seen (live)"),
                                key=f"live-{m}-{so_far.n_rows}")

                alg = m.split("-")[0]
                r = train.online_train(net, data_run, m, key=as_key(seed), T=T, sigma0_2=s02,
                                       alpha=None if alg == "bong" else lr,
                                       n_iter=n_iter if alg in ("blr", "bbb") else 1, n_checkpoints=8,
                                       n_test=min(500, len(data_run.y_test)), n_mc=20, progress=prog,
                                       on_chunk=on_chunk)
                store[key] = summarise_online(r, key)
            store.pop(partial_key, None)
            st.session_state["cnn_shown"] = [k for k in st.session_state["cnn_shown"] if k != partial_key]
            show_run(key)
    bar.progress(1.0, text="done")
    live.empty()

# ---------------------------------------------------------------------------------- results
shown = [store[k] for k in st.session_state["cnn_shown"] if k in store]
vi_runs = [r for r in shown if r["kind"] == "vi"]
on_runs = [r for r in shown if r["kind"] == "online"]
if not shown:
    st.info("Choose the settings and press **Train**. Finished runs stay here (and are cached for this server) so "
            "that you can compare them side by side.")
else:
    st.subheader("Finished runs")
    for r in shown:
        ui.report_status(r["status"], r["label"])
    table = pd.DataFrame([{
        "run": r["label"], "status": r["status"],
        "final ELBO (MC, full train)": r.get("final_elbo", np.nan),
        "test error": (r["test_err"][-1] if r["kind"] == "vi" else r["metrics"]["err_plugin"][-1]),
        "test NLPD": (r["test_nlpd"][-1] if r["kind"] == "vi" else r["metrics"]["nlpd_plugin"][-1]),
        "examples/s": r["examples_per_second"], "device": r["device"]} for r in shown])
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption("VI: ELBO and test metrics of the Monte Carlo predictive (10 draws). Online: plug-in predictive at t = T.")
    csv = pd.DataFrame([row for r in shown for row in r["rows"]]).to_csv(index=False)
    st.download_button("Download all runs (CSV)", csv, file_name="cnn_lab_runs.csv", mime="text/csv", key="csv")
    if st.button("Clear the comparison", key="clear"):
        st.session_state["cnn_shown"] = []
        st.rerun()
    if vi_runs:
        c1, c2 = st.columns(2)
        with c1:
            ui.show(pcnn.elbo_curves(vi_runs), key="elbo")
        with c2:
            ui.show(pcnn.metric_curves(vi_runs, "test_nlpd", "Test NLPD of the predictive (probabilities averaged over 10 draws)"), key="nlpd")
    if on_runs:
        ui.show(pcnn.online_curves(on_runs), key="online")
    ui.show(pcnn.speed_bars([r["label"] for r in shown], [r["examples_per_second"] for r in shown],
                            f"Training speed on {devices.device_label()}"), key="speed")

    # ------------------------------------------------------------------------ gallery
    st.subheader("What the trained posterior says about test images")
    usable = [k for k in st.session_state["cnn_shown"]
              if k in store and store[k]["model"] == model_name and store[k]["dataset"] == ds_name]
    if not usable:
        st.info("The gallery uses runs of the model and data set selected above.")
    else:
        labels = {store[k]["label"]: k for k in usable}
        pick = ui.select("Run", "gal", list(labels), store[usable[-1]]["label"])
        run_key = labels[pick]
        n_show = min(12, len(data_full.y_test))
        with ui.guard("computing predictive probabilities"):
            Xte, yte = data_full.x_test[:500], data_full.y_test[:500]
            probs, H = gallery_probs(run_key, net, store[run_key], Xte, seed)
            st.markdown("Predictive probabilities average the softmax over 20 draws from q; the predictive entropy "
                        r"$H = -\sum_k p_k \log p_k$ (nats, at most $\log 10 = 2.30$) measures the uncertainty. Red: misclassified.")
            ui.show(pcnn.digit_gallery(Xte[:n_show], probs[:n_show], yte[:n_show], entropies=H[:n_show],
                                       title="First test images"), key="gallery")
            worst = np.argsort(-H)[:n_show]
            ui.show(pcnn.digit_gallery(Xte[worst], probs[worst], yte[worst], entropies=H[worst],
                                       title="Most uncertain test images (highest predictive entropy)"), key="uncertain")
            j = ui.slider("Probabilities of the k-th most uncertain image", "img", 1, n_show, 1) if n_show > 1 else 1
            w = worst[j - 1]
            ui.show(pcnn.probability_bars(probs[w], yte[w], title=f"Most uncertain image no. {j}: true class {int(yte[w])} "
                                          f"(red), H = {H[w]:.2f} nats"), key="probs")
            wrong = np.argmax(probs, 1) != yte
            st.caption(f"Mean entropy: correct {H[~wrong].mean():.2f} nats"
                       + (f", misclassified {H[wrong].mean():.2f} nats." if wrong.any() else "; no test image misclassified."))

# -------------------------------------------------------------------- recorded results
st.subheader("The orderings of the papers on the digits (reproduction cnn-digits-ordering)")
st.markdown(
    "A scaled-down analogue, not the papers' MNIST runs: averaged over 3 seeds, does SNNGM end with a higher ELBO "
    "than Adam (Tan Table 9), and does bong-lin-hess-dlr-10 reach a lower test NLPD than bong-mc-ef-diag "
    "(BONG Figs 1-2)? The outcome is shown whichever way it goes."
)
with ui.guard("reading the recorded reproduction"):
    rec = results.ordering()
    if rec is None:
        st.info("Not recorded yet: `python scripts/cnn_full_scale.py --only digits` (or `vilab repro "
                "cnn-digits-ordering`, about 3 minutes on a CPU) runs it.")
    else:
        st.caption(f"Recorded {rec['date']} on {rec['device']} by `{rec['script']}`.")
        rows = results.ordering_rows(rec)
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        for c in rows:
            if not c["holds"]:
                st.warning(f"The paper's direction does NOT hold here: {c['quantity']}. {c['note']}")

st.subheader("The papers' full-scale settings (GPU)")
st.markdown(
    "Tan (2025) Table 9 (MNIST row): LeNet-5, 61,706 weights, diagonal Gaussian, batch 128, 300 epochs "
    "(VOGN: batch 8, 7 epochs); paper: Adam -50535, PGA -82010, NAdam -50786, SNNGM -42936, NAGM -49113, "
    "VOGN -49247. Jones, Chang & Murphy Figs 1-2: the 57,722-weight CNN on the first T = 2000 MNIST examples. "
    "`scripts/cnn_full_scale.py` runs both with this code and writes `assets/cnn/*.json` with its settings, "
    "the device and the date."
)
full = {}
with ui.guard("reading the full-scale results"):
    full = results.full_scale()
if not full:
    st.info("No GPU run has been made yet, so there are no full-scale results to show (none are invented). "
            "On a machine with a GPU: `make data`, `pip install -e '.[gpu]'`, then `python scripts/cnn_full_scale.py`.")
for kind, res in full.items():
    with ui.guard(f"showing {res['file']}"):
        st.markdown(f"**{res['experiment']}** ({res['file']}): device {res['device']}, {res['date']}, "
                    f"`{res['script']}`")
        if res.get("device_info", {}).get("platform") == "cpu":
            st.warning(f"{res['file']} was made on a CPU (a smoke test), not at the papers' scale.")
        st.json(res["settings"], expanded=False)
        if kind == "tan":
            st.dataframe(pd.DataFrame(results.tan_rows(res)), hide_index=True, width="stretch")
            ui.show(pcnn.elbo_curves(results.tan_curves(res), title="Average ELBO per epoch (Tan Fig. 8 style)"),
                    key="tan-elbo")
        else:
            st.dataframe(pd.DataFrame(results.bong_rows(res)), hide_index=True, width="stretch")
            for i, (title, group) in enumerate(results.bong_figures(res)):
                ui.show(pcnn.online_curves(group, title=title), key=f"bong-fig-{i}")
