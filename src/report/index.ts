export * from "./metrics.js";
export * from "./groups.js";
export * from "./svg-chart.js";
export * from "./html.js";
export * from "./write.js";
export { escapeHtml, formatNumber } from "./escape.js";
