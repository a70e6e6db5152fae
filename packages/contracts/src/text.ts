import type { z } from 'zod';

/**
 * Characters that show as something else or not at all: C0 and C1 controls (a terminal's escape
 * sequences among them) and the bidirectional marks and overrides that reorder what follows them
 * (the "Trojan Source" characters, CVE-2021-42574). A name or note holding one reads one way in
 * the dashboard and another in a log or a terminal.
 */
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const HIDDEN_OR_REORDERING = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** Does text hold a character `HIDDEN_OR_REORDERING` names? */
export const hasHiddenCharacters = (text: string): boolean => HIDDEN_OR_REORDERING.test(text);

/** `schema`, refusing text with control characters or text-direction marks, naming `field`. */
export const shownAsSent = (schema: z.ZodString, field: string) =>
  schema.refine(
    (text) => !hasHiddenCharacters(text),
    `${field} must not contain control characters or text-direction marks (such as U+202E)`,
  );

const EVERY_HIDDEN = new RegExp(HIDDEN_OR_REORDERING.source, 'g');

/** Text with each character `HIDDEN_OR_REORDERING` names replaced by `by`. */
export const replaceHiddenCharacters = (text: string, by: string): string => text.replace(EVERY_HIDDEN, by);
