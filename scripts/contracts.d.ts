type Json = Record<string, unknown>;
export const BASELINES: string;
export function renderDocs(contracts: object): Record<string, string>;
export function baselineDocuments(contracts: object): Record<string, Json>;
export function breakingChanges(
  oasdiff: string,
  base: Json,
  revision: Json,
): { id: string; text: string; operation: string; path: string }[];
export function checkContracts(options: {
  contracts: object;
  current: Record<string, Json>;
  baselines: Record<string, Json | undefined>;
  released: Record<string, Json | undefined>;
  changelog: string;
  oasdiff: string;
}): string[];
export function oasdiffBinary(root?: string): string;
export function releaseBaseline(root: string, name: string): Json | undefined;
export function serialise(doc: Json): string;
