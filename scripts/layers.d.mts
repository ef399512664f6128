// Types of scripts/layers.mjs for the TypeScript tests that read the layer table.
export interface LayerEntry {
  layer: number;
  /** Same-layer entries this one may import. */
  uses?: string[];
}
export declare const LAYERS: Record<string, LayerEntry>;
export declare const ALLOWANCES: { files: string[]; folder: string; allow: string[]; why: string }[];
export declare function forbiddenFor(name: string, extraAllowed?: string[]): string[];
export declare function layerConfigs(): { files: (string | string[])[]; rules: Record<string, unknown> }[];
