/**
 * Name, code and stack frames of an error, without its message: library messages (SQL errors, parsers)
 * may quote the PHI they choked on, so logs carry only where and what kind.
 */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error };
  const code = (error as { code?: unknown }).code;
  const frames = (error.stack ?? '').split('\n').filter((line) => line.trimStart().startsWith('at '));
  return { name: error.name, ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}), stack: frames.slice(0, 12).join('\n') };
}
