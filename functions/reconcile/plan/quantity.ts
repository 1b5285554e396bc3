// Exact comparison of Kubernetes resource quantities.
//
// The API server stores Deployment quantities in canonical form ("1000m" comes
// back as "1", "0.5" as "500m"), while a GatewayConfiguration (a CRD) keeps
// whatever the user wrote. Comparing the strings would make every reconcile
// see a difference and write; comparing exact values does not.
import type { Quantity } from '../../../api/schemas.js';

interface Rational {
  num: bigint;
  den: bigint;
}

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

// Exponents beyond this are not real resource amounts; they are compared as
// text rather than spending time on huge powers of ten.
const MAX_EXPONENT = 64;

const QUANTITY = /^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?$/;

export function parseQuantity(quantity: Quantity): Rational | null {
  const match = QUANTITY.exec(String(quantity).trim());
  if (!match) return null;
  const [, sign = '', numberText = '', suffix = ''] = match;
  const [whole = '', fraction = ''] = numberText.split('.');
  let num = BigInt(`${whole}${fraction}` || '0');
  let exponent = -fraction.length;
  let den = 1n;
  const binary = BINARY[suffix];
  if (binary !== undefined) {
    num *= binary;
  } else if (/^[eE].+/.test(suffix)) {
    exponent += Number(suffix.slice(1));
  } else {
    exponent += DECIMAL_EXPONENT[suffix] ?? 0;
  }
  if (Math.abs(exponent) > MAX_EXPONENT) return null;
  if (exponent >= 0) num *= 10n ** BigInt(exponent);
  else den = 10n ** BigInt(-exponent);
  if (sign === '-') num = -num;
  return { num, den };
}

export function quantitiesEqual(a: Quantity, b: Quantity): boolean {
  const x = parseQuantity(a);
  const y = parseQuantity(b);
  if (x === null || y === null) return String(a) === String(b);
  return x.num * y.den === y.num * x.den;
}
