#!/usr/bin/env node
// Checks an OTLP/HTTP JSON request, traces (an ExportTraceServiceRequest) or
// metrics (an ExportMetricsServiceRequest, told by its resourceMetrics key),
// with the OpenTelemetry project's own decoder: the protobufjs classes generated
// from opentelemetry-proto that ship inside @opentelemetry/otlp-transformer.
//
//   scripts/install-otlp-decoder build/otlp-decoder
//   node scripts/validate-otlp-json.js payload.json build/otlp-decoder/node_modules
//
// The payload is decoded, encoded to protobuf wire format, decoded again and
// written back as OTLP JSON; that must give back the payload exactly. A field
// with a wrong name (protobufjs drops unknown fields), a wrong type (an int64
// as a number, an enum as a name) or a default value written out shows up as
// a difference. Ids go through hex <-> bytes first: that is the one place
// OTLP JSON departs from proto3 JSON (base64 bytes). Exit status 0: valid.
'use strict';
const fs = require('fs');
const path = require('path');

const [payloadPath, modulesArg] = process.argv.slice(2);
const modules = modulesArg || process.env.GLASSBOX_OTLP_DECODER_MODULES;
if (!payloadPath || !modules) {
  console.error('usage: validate-otlp-json.js PAYLOAD.json NODE_MODULES_DIR');
  process.exit(2);
}
const root = require(path.join(modules, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const collector = root.opentelemetry.proto.collector;
const ID_KEYS = new Set(['traceId', 'spanId', 'parentSpanId']);

// Applies `convert` to every id field, at any depth.
function mapIds(value, convert, where = '$') {
  if (Array.isArray(value)) return value.map((v, i) => mapIds(v, convert, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = ID_KEYS.has(k) ? convert(v, `${where}.${k}`) : mapIds(v, convert, `${where}.${k}`);
  }
  return out;
}

function hexToBytes(v, where) {
  if (typeof v !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(v)) throw new Error(`${where}: not a hex id: ${JSON.stringify(v)}`);
  return Buffer.from(v, 'hex');
}

function base64ToHex(v) {
  return Buffer.from(v, 'base64').toString('hex');
}

// The first path where a and b differ, or null.
function difference(a, b, where = '$') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) {
    return `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  }
  if (a === null || typeof a !== 'object') return a === b ? null : `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (!(k in a) || !(k in b)) return `${where}.${k}: only in the ${k in a ? 'payload' : 'decoded message'}`;
    const d = difference(a[k], b[k], `${where}.${k}`);
    if (d) return d;
  }
  return null;
}

try {
  const payload = JSON.parse(fs.readFileSync(payloadPath, 'utf8'));
  const metrics = payload !== null && typeof payload === 'object' && 'resourceMetrics' in payload;
  const Request = metrics
    ? collector.metrics.v1.ExportMetricsServiceRequest
    : collector.trace.v1.ExportTraceServiceRequest;
  const message = Request.fromObject(mapIds(payload, hexToBytes));
  const invalid = Request.verify(message);
  if (invalid) throw new Error(`schema: ${invalid}`);
  const decoded = Request.decode(Request.encode(message).finish());
  const back = mapIds(Request.toObject(decoded, { json: true, longs: String, enums: Number }), base64ToHex);
  const d = difference(payload, back);
  if (d) throw new Error(`the payload does not survive a protobuf round trip: ${d}`);
  if (metrics) {
    const all = decoded.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    const points = all.reduce((n, m) => n + (m[m.data] ? m[m.data].dataPoints.length : 0), 0);
    console.log(`ok: ${decoded.resourceMetrics.length} resourceMetrics, ${all.length} metrics, ${points} dataPoints`);
  } else {
    const spans = decoded.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)).length;
    console.log(`ok: ${decoded.resourceSpans.length} resourceSpans, ${spans} spans`);
  }
} catch (e) {
  console.error(`invalid OTLP JSON: ${e.message}`);
  process.exit(1);
}
