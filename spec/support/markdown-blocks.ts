/**
 * The fenced code blocks of a Markdown file, with what the comment line just above each says about it:
 * `<!-- run: NAME -->` (a test runs the blocks of that name, in order, as written) or `<!-- not run: why -->`.
 * Blocks in sh/bash/ts/js are code and must say one or the other; other blocks (json, plain text) are
 * examples of output and need nothing.
 */
export interface MarkdownBlock {
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  code: string;
  /** The name after `run:`, or undefined. */
  run: string | undefined;
  /** The reason after `not run:`, or undefined. */
  notRun: string | undefined;
}

const CODE_LANGUAGES = new Set(['sh', 'bash', 'ts', 'typescript', 'js', 'javascript', 'mjs']);

export function isCode(block: MarkdownBlock): boolean {
  return CODE_LANGUAGES.has(block.language);
}

export function markdownBlocks(markdown: string): MarkdownBlock[] {
  const lines = markdown.split('\n');
  const blocks: MarkdownBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(Math.min(indent, lines[j]!.length - lines[j]!.trimStart().length)));
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    const marker = k >= 0 ? /^\s*<!--\s*(run|not run):\s*(.*?)\s*-->\s*$/.exec(lines[k]!) : null;
    blocks.push({
      line: i + 1,
      language: open[2]!,
      code: body.join('\n') + '\n',
      run: marker?.[1] === 'run' ? marker[2] : undefined,
      notRun: marker?.[1] === 'not run' ? marker[2] : undefined,
    });
    i = j;
  }
  return blocks;
}

/** The code of the blocks named `name`, in order, joined. */
export function runnable(blocks: readonly MarkdownBlock[], name: string): string {
  const chosen = blocks.filter((block) => block.run === name);
  if (chosen.length === 0) throw new Error(`no block is marked "run: ${name}"`);
  return chosen.map((block) => block.code).join('\n');
}
