export * from "./metrics.js";
export * from "./groups.js";
export * from "./chart-data.js";
export * from "./chart-client.js";
export * from "./evaluations.js";
export * from "./html.js";
export * from "./write.js";
export { escapeHtml, formatNumber } from "./escape.js";
