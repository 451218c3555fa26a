import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from './errors';

export interface GeoLocation {
  ip: string;
  country: string;
  countryName: string;
  continent: string;
}

interface GeoipCountryModule {
  lookup(ip: string): { country: string; name: string; continent: string } | null;
}

// Ranges that locate nowhere: the caller's own network, not a place.
const NOT_PUBLIC = new Set(['private', 'loopback', 'linkLocal', 'uniqueLocal', 'unspecified', 'carrierGradeNat', 'reserved', 'multicast', 'broadcast', 'benchmarking', 'amt', 'as112', 'as112v6', 'deprecated', 'orchid2', 'droneRemoteIdProtocolEntityTags', 'ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo', 'discard']);

/**
 * Country-level geolocation from geoip-country's database, shipped inside the npm package and read
 * from disk at first use (GEOIP_DATA_DIR points elsewhere): nothing is downloaded at run time.
 */
export class GeoIp {
  private database: GeoipCountryModule | null = null;

  constructor(private readonly dataDir: string | undefined) {}

  private open(): GeoipCountryModule {
    if (this.database) return this.database;
    try {
      if (this.dataDir) (globalThis as { geoip_datadir?: string }).geoip_datadir = this.dataDir;
      // Loaded lazily: the package reads its database files when it is first required.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      this.database = require('geoip-country') as GeoipCountryModule;
      return this.database;
    } catch (cause) {
      throw new AppError('GEOIP_UNAVAILABLE', 503, 'The geolocation database cannot be read right now.', {}, cause);
    }
  }

  locate(ip: string): GeoLocation {
    // Standard text only (dotted-quad decimal IPv4, or IPv6): ipaddr.js also reads inet_aton's legacy
    // forms, so 010.8.8.8 (octal) was located as 8.8.8.8 where most readers see the private 10.8.8.8,
    // and 1.2.3 as 1.2.0.3 (a sixth probe).
    if (net.isIP(ip) === 0 || !ipaddr.isValid(ip)) throw new AppError('VALIDATION_ERROR', 400, `${ip} is not an IP address (dotted-quad decimal IPv4, or IPv6).`);
    let parsed = ipaddr.parse(ip);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    if (NOT_PUBLIC.has(parsed.range())) {
      throw new AppError('PRIVATE_IP', 422, `${ip} is a private, loopback, link-local or otherwise non-public address: it has no location.`);
    }
    const normalized = parsed.toString();
    const found = this.open().lookup(normalized);
    if (!found) throw new AppError('NOT_FOUND', 404, `No country is known for ${normalized}.`);
    return { ip: normalized, country: found.country, countryName: found.name, continent: found.continent };
  }
}
