// A pool thread that answers something other than a task result.
export default function convert() {
  return { bundle: 'not one' };
}
