// A deep copy of a JSON value (what the API server sends and the planner
// builds: plain objects, arrays, strings, numbers, booleans, null).
//
// structuredClone goes through V8's serializer and was half of the planner's
// time (a resync plans every Gateway; bench P6). This walks the value
// directly. Keys holding undefined are kept, as structuredClone keeps them.
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = cloneJson(v);
    return out as T;
  }
  return value;
}
