// Times one ONNX model in ONNX Runtime (npm onnxruntime-node, its native CPU library).
// usage: node ort_bench.js MODEL.onnx INPUT.npy THREADS WARMUP RUNS  -> JSON on stdout
'use strict';
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

function readInput(path) {
  const a = readNpy(path);
  if (a.type !== 'float32') throw new Error(path + ': only float32 inputs are supported, got ' + a.type);
  return new ort.Tensor('float32', a.data, a.shape);
}

async function main() {
  const [model, input, threads, warmup, runs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', executionProviders: ['cpu'],
  });
  const feeds = { [session.inputNames[0]]: readInput(input) };
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
