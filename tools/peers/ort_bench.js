// Times one ONNX model in ONNX Runtime (npm onnxruntime-node, its native CPU library).
// usage: node ort_bench.js MODEL.onnx INPUT.npy THREADS WARMUP RUNS  -> JSON on stdout
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(path + ': not a .npy file');
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = b.toString('latin1', off, off + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  if (descr !== '<f4') throw new Error(path + ': only float32 inputs are supported, got ' + descr);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + off + hlen, b.byteOffset + b.length));
  return new ort.Tensor('float32', data, shape);
}

async function main() {
  const [model, input, threads, warmup, runs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', executionProviders: ['cpu'],
  });
  const feeds = { [session.inputNames[0]]: readNpy(input) };
  for (let i = 0; i < Number(warmup); i++) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(JSON.stringify({ engine: 'onnxruntime-node ' + require('onnxruntime-node/package.json').version,
    threads: Number(threads), samples_ms: ms, latency_ms: { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0] } }));
}
main().catch(e => { console.error('ort_bench: ' + e.message); process.exit(2); });
