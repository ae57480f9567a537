// A pool thread that never finishes its task, so the queue behind it fills.
export default function convert() {
  return new Promise(() => {});
}
