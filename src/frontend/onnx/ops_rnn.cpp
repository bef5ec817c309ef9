// Importers for the recurrent ops (RNN, LSTM, GRU). Filled in by ops_rnn's author.
#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {

void RegisterRnnOps(Registry&) {}

}  // namespace texel::onnx_frontend
