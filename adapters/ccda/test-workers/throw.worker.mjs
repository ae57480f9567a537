// A pool thread whose library throws an error quoting the document, as parsers do.
export default function convert(xml) {
  throw new Error(`unexpected token in ${xml}`);
}
