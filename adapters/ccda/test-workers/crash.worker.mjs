// A pool thread that dies mid-task, as one would on running out of memory.
export default function convert() {
  process.exit(1);
}
