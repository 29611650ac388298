// Runs one ONNX model once in ONNX Runtime (npm onnxruntime-node) and writes every float32
// output as .npy: the check that a model joule wrote loads and computes the same in ORT.
// usage: node ort_run.js MODEL.onnx OUTDIR [--opt all|disabled] NAME=INPUT.npy|INPUT.npy ...
//   --opt disabled runs the graph node by node as written (a QDQ model in float: the simulation);
//   --opt all (default) lets ORT fuse QDQ patterns into its integer kernels.
'use strict';
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./npy');

async function main() {
  const args = process.argv.slice(2);
  let opt = 'all';
  const i = args.indexOf('--opt');
  if (i >= 0) { opt = args[i + 1]; args.splice(i, 2); }
  const [model, outdir, ...inputs] = args;
  if (!model || !outdir || inputs.length === 0) throw new Error('usage: ort_run.js MODEL OUTDIR [--opt all|disabled] INPUT.npy ...');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: opt, executionProviders: ['cpu'],
  });
  const feeds = {};
  inputs.forEach((spec, k) => {
    const eq = spec.indexOf('=');
    const name = eq > 0 ? spec.slice(0, eq) : session.inputNames[k];
    const a = readNpy(eq > 0 ? spec.slice(eq + 1) : spec);
    feeds[name] = new ort.Tensor(a.type, a.data, a.shape);
  });
  const out = await session.run(feeds);
  for (const name of session.outputNames) {
    const t = out[name];
    if (t.type !== 'float32') continue;
    writeNpy(path.join(outdir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), t.data, t.dims);
  }
}
main().catch(e => { console.error('ort_run: ' + e.message); process.exit(2); });
