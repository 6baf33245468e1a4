// vilab's chart element (vilab_ui.show): a Plotly figure drawn with plotly.js's cartesian bundle, which has every
// trace vilab draws (scatter, heatmap, contour, bar) in a third of the size of the full bundle that Streamlit's own
// chart element loads (1.5 MB against 4.7 MB: a new visitor's first load is 0.3-0.9 s shorter; README, Performance).
// The page sends the figure as JSON bytes, {figure, config, select, fit}:
//   fit     draw at the width of the chart's place on the page, and follow that width;
//   select  send a click on a point back to the page as the state {selection: {points: [{x, y, ...}]}}.
// A new figure for the same chart is drawn with Plotly.react, which redraws only what changed.
const BUNDLE = new URL("./plotly-cartesian.min.js", import.meta.url).href;
const RESIZE_WAIT_MS = 400;

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
  if (typeof data === "string") return JSON.parse(data);
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return JSON.parse(new TextDecoder().decode(data));
  return data;
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

function followFullScreen(gd, Plotly, size) {
  gd.addEventListener("fullscreenchange", () => {
    if (!gd.isConnected) return;
    const full = document.fullscreenElement === gd;
    Plotly.relayout(gd, full ? { width: window.innerWidth, height: window.innerHeight } : size());
  });
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const msg = decode(data);
  let gd = parentElement.querySelector(":scope > .vilab-chart");  // the graph div (Plotly adds .js-plotly-plot)
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "vilab-chart";
    parentElement.appendChild(gd);
  }
  const seq = gd.__vilabSeq = (gd.__vilabSeq || 0) + 1;  // only the newest figure is drawn
  clearTimeout(gd.__vilabResizeTimer);  // it is drawn at its place's width as it is now
  const fig = msg.figure;
  const layout = Object.assign({}, fig.layout);
  gd.style.height = (layout.height || 450) + "px";  // the chart's room is kept while plotly.js loads
  const fit = () => Math.max(1, Math.floor(parentElement.getBoundingClientRect().width || 700));
  if (msg.fit) layout.width = fit();
  // Every figure drawn is a new revision: plotly.js 4.1.1 throws ("Cannot read properties of undefined (reading
  // 'z')") on a Plotly.react of new contour traces under the revision it last drew, and a figure sent again is
  // new objects all the same
  layout.datarevision = "vilab-" + seq;
  gd.__vilabLayout = layout;  // the size it has on the page (after full screen)
  plotly().then((Plotly) => {
    if (seq !== gd.__vilabSeq || !gd.isConnected) return undefined;
    const config = Object.assign({}, msg.config);
    config.modeBarButtonsToAdd = (config.modeBarButtonsToAdd || []).concat([FULL_SCREEN]);
    return Plotly.react(gd, { data: fig.data, layout, frames: fig.frames || [], config }).then(() => {
      if (!gd.__vilabFull) {
        gd.__vilabFull = true;
        followFullScreen(gd, Plotly, () => ({ width: gd.__vilabLayout.width, height: gd.__vilabLayout.height || 450 }));
      }
      if (msg.select && !gd.__vilabClicks) {
        gd.__vilabClicks = true;
        sendClicks(gd, setStateValue);
      }
      if (msg.fit && !gd.__vilabResize && typeof ResizeObserver !== "undefined") {
        // A place that changes width is followed a moment later: when the page's run restyles it (lecture mode
        // toggled), the run's new figure comes within that moment and is drawn once, at the new width.
        gd.__vilabResize = new ResizeObserver(() => {
          clearTimeout(gd.__vilabResizeTimer);
          gd.__vilabResizeTimer = setTimeout(() => {
            if (!gd.isConnected || document.fullscreenElement === gd) return;
            const w = fit();
            gd.__vilabLayout.width = w;
            if (gd._fullLayout && Math.abs(w - gd._fullLayout.width) >= 1) Plotly.relayout(gd, { width: w });
          }, RESIZE_WAIT_MS);
        });
        gd.__vilabResize.observe(parentElement);
      }
    });
  }).catch((e) => { gd.textContent = "This chart could not be drawn: " + e.message; });
  return () => {
    clearTimeout(gd.__vilabResizeTimer);
    if (gd.__vilabResize) gd.__vilabResize.disconnect();
    gd.__vilabResize = null;
  };
}
