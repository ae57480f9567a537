import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

/*
 * An embedder reads a request field's documentation in their editor from the package's declarations, not
 * from our sources, and the declaration emitter drops a comment it cannot carry (a field of a zod shape
 * typed through a mapped type loses it). So the declarations are emitted here as the build emits them
 * (tsconfig.build.json), and each field's documentation is read back through the compiler, as a hover does,
 * from the sources and from the declarations: what was written must arrive.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRY = join(ROOT, 'client', 'index.ts');
let out: string;
let source: Map<string, string>;
let declared: Map<string, string>;

/** The documentation of each field of `type`, by path (`PatientCreate.address.zip`), nested objects included. */
function fieldDocs(checker: ts.TypeChecker, type: ts.Type, path: string, docs: Map<string, string>, depth = 0): void {
  for (const property of checker.getPropertiesOfType(type)) {
    const at = `${path}.${property.name}`;
    const doc = ts.displayPartsToString(property.getDocumentationComment(checker));
    // Members of a union (the kinds of personal identifier) may share a field's name: each one's doc counts.
    docs.set(at, [...new Set([...(docs.get(at)?.split('\n|\n') ?? []), doc])].filter(Boolean).sort().join('\n|\n'));
    if (depth < 3) for (const inner of objectTypesOf(checker, checker.getTypeOfSymbol(property))) fieldDocs(checker, inner, at, docs, depth + 1);
  }
}

/** The object types a field may hold, through `| null | undefined`, unions and arrays (one address or a list of them). */
function objectTypesOf(checker: ts.TypeChecker, type: ts.Type): ts.Type[] {
  const present = checker.getNonNullableType(type);
  if (present.isUnion()) return present.types.flatMap((member) => objectTypesOf(checker, member));
  if (checker.isArrayType(present)) return objectTypesOf(checker, checker.getTypeArguments(present as ts.TypeReference)[0]!);
  return present.flags & ts.TypeFlags.Object && !checker.isTupleType(present) ? [present] : [];
}

/**
 * The documentation of every field of the request types the client exports (those of contract/requests.ts)
 * and of the options of `startBulkPatientCreate`, as `program` shows them from `entry`.
 */
function requestFieldDocs(program: ts.Program, entry: string): Map<string, string> {
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const docs = new Map<string, string>();
  for (const exported of checker.getExportsOfModule(module)) {
    const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const file = target.declarations?.[0]?.getSourceFile().fileName ?? '';
    if (/contract\/requests\.(d\.)?ts$/.test(file) && target.flags & ts.SymbolFlags.TypeAlias) {
      fieldDocs(checker, checker.getDeclaredTypeOfSymbol(target), exported.name, docs);
    }
    if (exported.name === 'CarebridgeClient') {
      const method = checker.getPropertyOfType(checker.getDeclaredTypeOfSymbol(target), 'startBulkPatientCreate')!;
      const options = checker.getTypeOfSymbol(checker.getSignaturesOfType(checker.getTypeOfSymbol(method), ts.SignatureKind.Call)[0]!.parameters[0]!);
      fieldDocs(checker, checker.getNonNullableType(options), 'startBulkPatientCreate(options)', docs);
    }
  }
  return docs;
}

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'carebridge-declarations-'));
  // The declarations import zod as the installed package does: from a node_modules beside them.
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'), 'dir');
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.build.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const built = ts.createProgram([ENTRY], { ...options, outDir: out, declaration: true, emitDeclarationOnly: true, noEmit: false });
  const emitted = built.emit();
  expect(emitted.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  source = requestFieldDocs(built, ENTRY);
  const declarations = join(out, 'client', 'index.d.ts');
  declared = requestFieldDocs(ts.createProgram([declarations], { ...options, noEmit: true }), declarations);
}, 120_000);

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

describe("request fields' documentation in the built declarations", () => {
  test('every field documented in the sources is documented alike in the declarations an embedder installs', () => {
    expect([...declared.keys()].sort()).toEqual([...source.keys()].sort());
    const lost = [...source].filter(([path, doc]) => doc !== declared.get(path)).map(([path, doc]) => ({ path, written: doc, declared: declared.get(path) }));
    expect(lost).toEqual([]);
  });

  test('the fields of patient create, bulk start and webhook endpoint create are documented', () => {
    const undocumented = (prefix: string) => [...declared].filter(([path, doc]) => path.startsWith(prefix) && !doc).map(([path]) => path);
    expect(undocumented('PatientCreate.')).toEqual([]);
    expect(undocumented('startBulkPatientCreate(options).')).toEqual([]);
    expect(undocumented('WebhookEndpointCreate.')).toEqual([]);
    // The walk reaches nested fields, so a doc lost there is seen too.
    expect(declared.get('PatientCreate.address.zip')).toMatch(/ZIP\+4/);
  });
});
