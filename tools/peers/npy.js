// Minimal .npy reading and writing for the peer scripts (float32 / int64, little-endian, C order).
'use strict';
const fs = require('fs');

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(path + ': not a .npy file');
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = b.toString('latin1', off, off + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(path + ': Fortran-ordered arrays are not supported');
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const bytes = b.buffer.slice(b.byteOffset + off + hlen, b.byteOffset + b.length);
  if (descr === '<f4') return { type: 'float32', data: new Float32Array(bytes), shape };
  if (descr === '<i8') return { type: 'int64', data: new BigInt64Array(bytes), shape };
  throw new Error(path + ': only float32 and int64 arrays are supported, got ' + descr);
}

function writeNpy(path, data, shape) {
  if (!(data instanceof Float32Array)) throw new Error(path + ': only float32 outputs are written');
  let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape.join(', ') +
    (shape.length === 1 ? ',' : '') + '), }';
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const tmp = path + '.tmp';
  fs.writeFileSync(tmp, Buffer.concat([head, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
  fs.renameSync(tmp, path);
}

module.exports = { readNpy, writeNpy };
