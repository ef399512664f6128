// Line charts with uPlot (a global: the dashboard's index.html loads the server's copy of the npm package; report.html
// inlines it). Series, grouping, titles and colours come from src/report/chart-data.ts. Shared by the dashboard (served
// as /assets/charts.js) and report.html (inlined before a few lines that draw its embedded data), so both draw alike.

const HEIGHT = 220;

function widthOf(el) {
  return Math.max(280, Math.floor(el.getBoundingClientRect().width) - 4);
}

/**
 * The y axis's width, from its longest tick label: a fixed width cut token counts ("800,000") to their last digits.
 * uPlot calls this while it lays out (cycle 1, then again if the labels changed); never narrower than 56 px.
 */
function yAxisSize(self, values, axisIdx, cycle) {
  const axis = self.axes[axisIdx];
  if (cycle > 1 && axis._size) return axis._size;
  const longest = (values ?? []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
  if (!longest) return 56;
  self.ctx.font = axis.font[0];
  const text = self.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
  return Math.max(56, Math.ceil(text + axis.ticks.size + axis.gap + 8));
}

function options(chart, width) {
  return {
    width,
    height: HEIGHT,
    legend: { show: true, live: true },
    cursor: { drag: { x: true, y: false } },
    scales: { x: { time: false } },
    // Steps are integers: no ticks between them.
    axes: [{ label: "step", size: 36, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000] }, { size: yAxisSize }],
    series: [{ label: "step" }, ...chart.names.map((name, i) => ({ label: name, stroke: chart.colors[i], width: 1.6, spanGaps: true, points: { show: chart.x.length <= 60, size: 4 } }))],
  };
}

function data(chart) {
  return [chart.x, ...chart.ys];
}

/** Draws `chart` into `el` (replacing what was there); returns a handle whose update() takes a newer ChartData. */
export function lineChart(el, chart) {
  el.replaceChildren();
  el.dataset.points = String(chart.x.length);
  if (chart.x.length === 0) {
    const p = document.createElement("div");
    p.className = "chart-empty";
    p.textContent = "no data yet";
    el.append(p);
  }
  let current = chart;
  let plot = new uPlot(options(chart, widthOf(el)), data(chart), el);
  const resize = new ResizeObserver(() => plot.setSize({ width: widthOf(el), height: HEIGHT }));
  resize.observe(el);
  return {
    update(next) {
      el.dataset.points = String(next.x.length);
      if (next.names.join("\n") === current.names.join("\n")) plot.setData(data(next));
      else {
        plot.destroy();
        el.replaceChildren();
        plot = new uPlot(options(next, widthOf(el)), data(next), el);
      }
      current = next;
    },
    destroy() {
      resize.disconnect();
      plot.destroy();
    },
  };
}
