// A small deterministic YAML emitter for JSON data (block style, kubectl's list indentation).
// Strings are plain when unambiguous in YAML 1.1 and 1.2, otherwise JSON-quoted: a JSON string
// is also a valid YAML double-quoted scalar.

const keywords = /^(?:y|n|yes|no|on|off|true|false|null|~|=|<<)$/i;

function plainSafe(s: string): boolean {
  if (s === "" || s !== s.trim()) return false;
  if (keywords.test(s)) return false;
  if (/^[-+]?(?:\.?\d|\.(?:inf|nan)$)/i.test(s)) return false; // numbers, .inf, .nan
  if (!/^[A-Za-z_./$][\w .,/()<>=+@$':-]*$/.test(s)) return false;
  return !s.includes(": ") && !s.includes(" #") && !s.endsWith(":");
}

function scalar(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error("YAML: non-finite number");
    return String(value);
  }
  if (typeof value === "string") return plainSafe(value) ? value : JSON.stringify(value);
  throw new Error(`YAML: cannot emit ${typeof value}`);
}

function isCollection(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === "object" && value !== null;
}

function isEmpty(value: Record<string, unknown> | unknown[]): boolean {
  return Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0;
}

function emit(value: unknown, indent: string, lines: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) emitItem(item, indent, lines);
  } else if (isCollection(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (child === undefined) continue;
      emitEntry(key, child, indent, lines);
    }
  } else {
    lines.push(indent + scalar(value));
  }
}

function emitEntry(key: string, child: unknown, indent: string, lines: string[]): void {
  const k = scalar(key);
  if (!isCollection(child)) {
    lines.push(`${indent}${k}: ${scalar(child)}`);
  } else if (isEmpty(child)) {
    lines.push(`${indent}${k}: ${Array.isArray(child) ? "[]" : "{}"}`);
  } else {
    lines.push(`${indent}${k}:`);
    // sequences sit at their key's indentation, as kubectl and kubebuilder write them
    emit(child, Array.isArray(child) ? indent : `${indent}  `, lines);
  }
}

function emitItem(item: unknown, indent: string, lines: string[]): void {
  if (!isCollection(item) || isEmpty(item)) {
    lines.push(`${indent}- ${isCollection(item) ? (Array.isArray(item) ? "[]" : "{}") : scalar(item)}`);
    return;
  }
  const nested: string[] = [];
  emit(item, `${indent}  `, nested);
  // the first line of the item's block goes on the dash line
  const [first = "", ...rest] = nested;
  lines.push(`${indent}- ${first.slice(indent.length + 2)}`, ...rest);
}

/** YAML text of a JSON value, one trailing newline. */
export function toYaml(value: unknown): string {
  if (!isCollection(value)) return `${scalar(value)}\n`;
  if (isEmpty(value)) return Array.isArray(value) ? "[]\n" : "{}\n";
  const lines: string[] = [];
  emit(value, "", lines);
  return `${lines.join("\n")}\n`;
}
