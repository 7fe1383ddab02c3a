// Masks IP addresses inside free text (error messages can carry a user's LAN or public address).
import { isIPv4, isIPv6 } from "node:net";

export const IPV4_MASK = "<ipv4>";
export const IPV6_MASK = "<ipv6>";

const IPV4 = /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)/g;
// Candidates only; each is confirmed with isIPv6. Requiring "::" or at least 7 colons keeps
// clock times (12:34:56) and MAC addresses out.
const IPV6 = /(?<![\w:.])[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*[0-9A-Fa-f](?:%[\w.]+)?(?![\w:])|(?<![\w:])::(?![\w:])/g;

function maskV6(candidate: string): string {
  const bare = candidate.replace(/%[\w.]+$/, "");
  const colons = bare.split(":").length - 1;
  const plausible = bare.includes("::") || colons >= 7 || (colons >= 6 && bare.includes("."));
  return plausible && isIPv6(bare) ? IPV6_MASK : candidate;
}

export function maskIpAddresses(text: string): string {
  return text
    .replace(IPV6, maskV6)
    .replace(IPV4, (candidate) => (isIPv4(candidate) ? IPV4_MASK : candidate));
}
