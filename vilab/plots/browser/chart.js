// vilab's chart element (vilab_ui.show): a Plotly figure drawn with plotly.js's cartesian bundle, which has every
// trace vilab draws (scatter, heatmap, contour, bar) in a third of the size of the full bundle that Streamlit's own
// chart element loads (1.5 MB against 4.7 MB). The bundle is npm's plotly.js-cartesian-dist-min, unchanged
// (SOURCE.txt: package, version, sha256; LICENSE-plotly.js.txt). Only plotly.js's public API is used.
// The page sends the figure as JSON bytes, {figure, config, select, fit, play?}:
//   fit     draw at the width of the chart's place on the page, and follow that width; the height is the figure's,
//           or the CSS custom property --vilab-chart-height where an ancestor defines it (lecture mode's stage);
//   select  send a click on a point back to the page as the state {selection: {points: [{x, y, ...}]}};
//   play    {token, fps, playing, report_every_s, base}: play the figure's frames at fps with Plotly.animate (only
//           the traces a frame names are drawn again: contours and heat maps stay), append the frames of a later
//           message with the same token, report the position as the state {play: {token, at, queued, t}}; base is
//           the iteration of the figure sent with the frames. A play's first message whose figure differs from the
//           one on screen only in scatter traces starts at once: those traces are its first frame (named base),
//           and the figure is not drawn again (Plotly.react of contours takes the most time of a Play's start).
//           A frame's trace may hold a data array's new part only (a path grows by a few points a frame): its
//           "vilab_tail" {key: n} says the array is the first n entries of the same trace's array in the frame
//           before (in the figure, for the first frame) followed by those given (vilab_ui/live.py's _tail).
// A new figure for the same chart is drawn with Plotly.react, which redraws only what changed.
const BUNDLE = new URL("./plotly-cartesian.min.js", import.meta.url).href;
const RESIZE_WAIT_MS = 250;
const LOW_QUEUE_S = 0.5;  // a play reports when fewer seconds of frames than this are left to draw

function plotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__vilabPlotly) {  // one load for every chart of the page
    window.__vilabPlotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = BUNDLE;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => { window.__vilabPlotly = null; reject(new Error("plotly.js did not load")); };
      document.head.appendChild(s);
    });
  }
  return window.__vilabPlotly;
}

function decode(data) {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return new TextDecoder().decode(data);
  return JSON.stringify(data);
}

function sendClicks(gd, setStateValue) {
  const send = (ev) => {
    const points = ((ev && ev.points) || []).map((p) => ({
      x: p.x, y: p.y, z: p.z, curve_number: p.curveNumber, point_number: p.pointNumber, point_index: p.pointIndex,
    }));
    setStateValue("selection", { points });
  };
  gd.on("plotly_click", send);
  gd.on("plotly_selected", send);
}

// a button in the chart's toolbar that fills the screen with it (a projector), as Streamlit's chart element has;
// Esc leaves, and the chart is drawn again at its place's size
const FULL_SCREEN = {
  name: "fullscreen",
  title: "Full screen",
  icon: { width: 24, height: 24, path: "M3 3h7v2H5v5H3zm11 0h7v7h-2V5h-5zM3 14h2v5h5v2H3zm16 0h2v7h-7v-2h5z" },
  click: (gd) => { if (gd.requestFullscreen) gd.requestFullscreen().catch(() => {}); },
};

// Fits the stage and says the figure's height there: the height the page's CSS asks for (C2: --vilab-chart-height
// on an ancestor, any CSS length), in px, or null off the stage. On the stage (lecture mode) the figure's caption,
// the first "what to notice" box right under it, is fitted to end on the first screen (its max-height, set here):
// the figure gives up what the caption needs beyond the room the CSS left it, as long as it keeps STAGE_SHARE of
// the screen (the stage's figure covers at least 60 %); a caption longer than that scrolls in its box. Off the
// stage (lecture mode turned off) the captions it fitted get their own heights back.
const CAPTION = '[data-testid="stAlertContainer"]';
const CAPTION_PAD_PX = 6;
const STAGE_SHARE = 0.62;
const CAPTION_GAP_PX = 120;  // a caption starts at most this far under the figure (a button row may stand between)
function fitStage(parent) {
  const host = parent instanceof ShadowRoot ? parent.host : parent;
  if (!getComputedStyle(host).getPropertyValue("--vilab-chart-height").trim()) {
    const main = document.querySelector(".st-key-main_figure");
    if (!main || !getComputedStyle(main).getPropertyValue("--vilab-chart-height").trim()) {
      for (const el of document.querySelectorAll("[data-vilab-fit]")) {  // lecture mode is off: as Streamlit drew it
        el.style.maxHeight = ""; el.style.overflowY = ""; delete el.dataset.vilabFit;
      }
    }
    return null;
  }
  const probe = document.createElement("div");
  probe.style.cssText = "position:absolute;visibility:hidden;pointer-events:none;width:0;height:var(--vilab-chart-height)";
  parent.appendChild(probe);
  let h = probe.getBoundingClientRect().height;
  probe.remove();
  if (!(h > 0)) return null;
  const cap = captionOf(host);
  const gd = parent.querySelector(":scope > .vilab-chart");
  const below = cap && gd ? cap.getBoundingClientRect().top - gd.getBoundingClientRect().bottom : Infinity;
  if (below >= 0 && below <= CAPTION_GAP_PX) {  // a caption right under the figure (not a note further down)
    cap.style.maxHeight = "";  // its own height
    const box = cap.getBoundingClientRect();
    const top = box.top + window.scrollY - gd.getBoundingClientRect().height;  // with a figure of height 0
    const room = window.innerHeight - CAPTION_PAD_PX - top;  // for the figure and its caption
    const need = box.height;
    const keep = Math.min(h, (STAGE_SHARE * window.innerWidth * window.innerHeight) / Math.max(1, gd.getBoundingClientRect().width));
    const fig = Math.max(Math.min(h, room - need), keep);
    cap.dataset.vilabFit = "1";
    cap.style.maxHeight = Math.max(48, Math.floor(room - fig)) + "px";
    cap.style.overflowY = "auto";
    h = fig;
  }
  return Math.max(160, Math.floor(h));
}

function captionOf(host) {
  const main = host.closest('[data-testid="stMain"]');
  if (!main) return null;
  for (const el of main.querySelectorAll(CAPTION)) {
    if (host.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) return el;
  }
  return null;
}

// the frames' names are iterations: the number in a name, for order and for the position reported
const iterOf = (name) => { const n = parseInt(name, 10); return Number.isFinite(n) ? n : -1; };

// A play's frames with their tails put together (see "vilab_tail" above). ``last`` holds, per trace, its arrays as
// the frame before left them: start it from the play's figure (``arraysOf``, before plotly.js is given the figure),
// and give it the frames in order, each once.
const TAIL = "vilab_tail";
function arraysOf(fig) {
  return (fig.data || []).map((t) => {
    const got = {};
    for (const k of Object.keys(t)) if (Array.isArray(t[k])) got[k] = t[k];
    return got;
  });
}
function untail(last, frames) {
  for (const f of frames) {
    (f.traces || []).forEach((i, j) => {
      const t = (f.data || [])[j];
      if (!t) return;
      const before = last[i] || (last[i] = {});
      const tail = t[TAIL];
      if (tail) {
        delete t[TAIL];
        for (const k of Object.keys(tail)) t[k] = (before[k] || []).slice(0, tail[k]).concat(t[k] || []);
      }
      for (const k of Object.keys(t)) if (Array.isArray(t[k])) before[k] = t[k];
    });
  }
  return frames;
}

// The figure on screen as the last Plotly.react drew it (its layout less size and revision, and each trace, as JSON),
// for a play's first message: null when a play has changed the screen since.
function shownOf(fig) {
  const layout = Object.assign({}, fig.layout);
  delete layout.datarevision; delete layout.width; delete layout.height;
  return { layout: JSON.stringify(layout), traces: (fig.data || []).map((t) => JSON.stringify(t)) };
}

// The first frame of a play whose figure is the one on screen but for some scatter traces: those traces at the
// play's base iteration (null when anything else differs: then the figure is drawn with Plotly.react).
function startFrame(shown, fig, play) {
  const now = shownOf(fig);
  if (!shown || shown.layout !== now.layout || shown.traces.length !== now.traces.length) return null;
  const changed = [];
  now.traces.forEach((t, i) => { if (t !== shown.traces[i]) changed.push(i); });
  if (!changed.every((i) => (fig.data[i].type || "scatter") === "scatter")) return null;
  const base = Number(play.base);
  if (!Number.isFinite(base)) return null;
  return { name: String(base), data: changed.map((i) => fig.data[i]), traces: changed };
}

// ------------------------------------------------------------------------------------------------ play
// One play: its token, the names of the frames queued (in order), how far it has drawn. A loop on the screen's
// refresh draws the frame due at the play's rate (one Plotly.animate of that frame, without a redraw of the
// traces it does not name); on a slow machine it skips to the frame due rather than falling behind.
function stopPlay(gd) {
  const p = gd.__vilabPlay;
  if (p) { p.stopped = true; cancelAnimationFrame(p.raf); }
  gd.__vilabPlay = null;
}

function report(p, setStateValue, force) {
  const now = Date.now();
  const at = p.drawn >= 0 ? iterOf(p.names[p.drawn]) : p.base;
  const queued = p.names.length ? iterOf(p.names[p.names.length - 1]) : p.base;
  const left = (p.names.length - 1 - p.drawn) / p.fps;
  const low = left < LOW_QUEUE_S && p.lowReported !== queued;
  const done = p.drawn === p.names.length - 1 && p.doneReported !== queued;
  if (!force && !low && !done && now - p.lastReport < p.everyMs) return;
  if (!force && now - p.lastReport < 50 && !done) return;  // never more than 20 a second
  if (low) p.lowReported = queued;
  if (done) p.doneReported = queued;
  p.lastReport = now;
  setStateValue("play", { token: p.token, at, queued, t: now });
}

function startPlay(gd, Plotly, frames, play, setStateValue, base, last) {
  stopPlay(gd);
  const p = gd.__vilabPlay = {
    token: play.token, last, fps: Math.max(1, Math.min(120, Number(play.fps) || 30)),
    everyMs: 1000 * Math.max(0.05, Number(play.report_every_s) || 0.25),
    names: frames.map((f) => String(f.name)), drawn: -1, base, t0: null, busy: false, stopped: false,
    raf: 0, lastReport: 0, lowReported: null, doneReported: null, setStateValue,
  };
  const tick = (now) => {
    if (p.stopped) return;
    if (!gd.isConnected) { stopPlay(gd); return; }
    p.raf = requestAnimationFrame(tick);
    if (p.busy || p.drawn >= p.names.length - 1) return;
    if (p.t0 === null) p.t0 = now - 1000 / p.fps;  // the first frame now
    let due = Math.min(p.names.length - 1, Math.floor(((now - p.t0) * p.fps) / 1000 + 1e-6) - 1);
    if (due <= p.drawn) return;
    if (due > p.drawn + 2) {  // far behind (a busy machine): slow down from here rather than jump ahead
      due = p.drawn + 1;
      p.t0 = now - ((due + 1) * 1000) / p.fps;
    }
    p.busy = true;
    Plotly.animate(gd, [p.names[due]], {
      frame: { duration: 0, redraw: false }, transition: { duration: 0 }, mode: "immediate",
    }).then(() => {
      if (p.stopped) return;
      p.busy = false;
      p.drawn = due;
      report(p, setStateValue, false);
    }, () => { p.busy = false; });
  };
  p.raf = requestAnimationFrame(tick);
  report(p, setStateValue, true);
  return p;
}

// the frames of a later message of the same play: those after the last one queued, added to the figure and the queue
function appendFrames(gd, Plotly, p, frames, play) {
  const last = p.names.length ? iterOf(p.names[p.names.length - 1]) : p.base;
  const fresh = frames.filter((f) => iterOf(f.name) > last);
  p.fps = Math.max(1, Math.min(120, Number(play.fps) || p.fps));
  if (!fresh.length) return Promise.resolve();
  if (p.drawn === p.names.length - 1 && p.t0 !== null) {  // it had drawn everything: go on from now, at the rate
    p.t0 = performance.now() - ((p.drawn + 1) * 1000) / p.fps;
  }
  return Plotly.addFrames(gd, untail(p.last, fresh)).then(() => {
    for (const f of fresh) p.names.push(String(f.name));
    p.doneReported = null;
  });
}

// A place (or window, or the stage's column with the figure's caption) that changes size is followed a moment later:
// when the page's run restyles it (lecture mode toggled), the run's new figure comes within that moment and is drawn
// once, at the new size.
function follow(gd, Plotly, parentElement, fitted) {
  if (gd.__vilabResize) return;
  const later = () => {
    clearTimeout(gd.__vilabResizeTimer);
    gd.__vilabResizeTimer = setTimeout(() => {
      if (!gd.isConnected || document.fullscreenElement === gd || !gd.__vilabSize) return;
      const s = fitted();
      if (Math.abs(s.width - gd.__vilabSize.width) >= 1 || Math.abs(s.height - gd.__vilabSize.height) >= 1) {
        gd.__vilabSize = s;
        Plotly.relayout(gd, s);
      }
    }, RESIZE_WAIT_MS);
  };
  gd.__vilabResize = { observer: typeof ResizeObserver !== "undefined" ? new ResizeObserver(later) : null, later };
  if (gd.__vilabResize.observer) {
    gd.__vilabResize.observer.observe(parentElement);
    // the stage's column: its caption comes after the figure is drawn, and is taller on a narrower screen
    const host = parentElement instanceof ShadowRoot ? parentElement.host : parentElement;
    const column = host.closest('[data-testid="stColumn"]');
    if (column) gd.__vilabResize.observer.observe(column);
  }
  window.addEventListener("resize", later);
}

function unfollow(gd) {
  clearTimeout(gd.__vilabResizeTimer);
  const r = gd.__vilabResize;
  if (!r) return;
  if (r.observer) r.observer.disconnect();
  window.removeEventListener("resize", r.later);
  gd.__vilabResize = null;
}

// ------------------------------------------------------------------------------------------------ element
export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const raw = decode(data);
  let gd = parentElement.querySelector(":scope > .vilab-chart");  // the graph div (Plotly adds .js-plotly-plot)
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "vilab-chart";
    parentElement.appendChild(gd);
  }
  const msg = JSON.parse(raw);
  const fig = msg.figure;
  const play = msg.play || null;
  const seq = gd.__vilabSeq = (gd.__vilabSeq || 0) + 1;  // only the newest figure is drawn
  clearTimeout(gd.__vilabResizeTimer);  // it is drawn at its place's size as it is now

  const size = (stage) => {  // the chart's size: its place's width (fit) and the stage's height (px) or its own
    const want = gd.__vilabWant;
    const w = want.fit ? Math.max(1, Math.floor(parentElement.getBoundingClientRect().width || 700)) : want.width;
    return { width: w, height: stage || want.height || 450 };
  };
  const fitted = () => size(fitStage(parentElement));  // the stage fitted (its caption), then the size to draw at
  gd.__vilabWant = { fit: !!msg.fit, width: fig.layout.width, height: fig.layout.height };
  const now = fitted();
  if (!gd.__vilabSize) gd.style.height = now.height + "px";  // the chart's room is kept while plotly.js loads

  plotly().then((Plotly) => {
    if (seq !== gd.__vilabSeq || !gd.isConnected) return undefined;
    const running = gd.__vilabPlay;
    follow(gd, Plotly, parentElement, fitted);
    if (play && play.playing && running && running.token === play.token) {  // the same play: go on, no redraw
      return appendFrames(gd, Plotly, running, fig.frames || [], play);
    }
    const frames = fig.frames || [];
    if (play && play.playing && frames.length && !running && gd.__vilabSize && gd.__vilabSize.width === now.width
        && gd.__vilabSize.height === now.height) {  // Play pressed on the figure on screen: start at once
      const first = startFrame(gd.__vilabShown, fig, play);
      if (first) {
        gd.__vilabShown = null;  // the play changes the screen from here on
        gd.__vilabRaw = null;
        const last = arraysOf(fig);
        const all = [first].concat(untail(last, frames));
        return Plotly.addFrames(gd, all).then(() => {
          if (seq === gd.__vilabSeq && gd.isConnected) {
            startPlay(gd, Plotly, all, play, setStateValue, Number(play.base), last);
          }
        });
      }
    }
    stopPlay(gd);
    if (raw === gd.__vilabRaw && gd.__vilabSize && gd.__vilabSize.width === now.width
        && gd.__vilabSize.height === now.height && !(play && play.playing)) return undefined;  // drawn as it is
    const layout = Object.assign({}, fig.layout, now);
    // Every figure drawn is a new revision: plotly.js 4.1.1 throws ("Cannot read properties of undefined (reading
    // 'z')") on a Plotly.react of new contour traces under the revision it last drew, and a figure sent again is
    // new objects all the same
    layout.datarevision = "vilab-" + seq;
    const config = Object.assign({}, msg.config);
    config.modeBarButtonsToAdd = (config.modeBarButtonsToAdd || []).concat([FULL_SCREEN]);
    const shown = shownOf(fig);  // before Plotly.react, which adds to the traces it is given
    const last = play && play.playing ? arraysOf(fig) : null;
    if (last) untail(last, frames);
    return Plotly.react(gd, { data: fig.data, layout, frames, config }).then(() => {
      gd.__vilabRaw = raw;
      gd.__vilabShown = shown;
      gd.__vilabSize = now;
      gd.style.height = "";
      if (!gd.__vilabFull) {
        gd.__vilabFull = true;
        gd.addEventListener("fullscreenchange", () => {
          if (!gd.isConnected) return;
          const full = document.fullscreenElement === gd;
          const s = full ? { width: window.innerWidth, height: window.innerHeight } : fitted();
          gd.__vilabSize = s;
          Plotly.relayout(gd, s);
        });
      }
      if (msg.select && !gd.__vilabClicks) {
        gd.__vilabClicks = true;
        sendClicks(gd, setStateValue);
      }
      if (play && play.playing && frames.length) {
        const base = frames.length ? iterOf(frames[0].name) - 1 : -1;
        gd.__vilabRaw = null;  // it will not look like the message any more
        gd.__vilabShown = null;
        startPlay(gd, Plotly, frames, play, setStateValue, base, last);
      }
    });
  }).then(() => {  // on the stage the caption comes after the figure (or with a later message): fitted a moment later
    if (seq === gd.__vilabSeq && gd.__vilabResize && !gd.__vilabPlay) gd.__vilabResize.later();
  }).catch((e) => {
    stopPlay(gd);
    gd.textContent = "This chart could not be drawn: " + e.message;
  });
  return () => unfollow(gd);
}
