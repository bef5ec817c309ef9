// Importers for the recurrent ops RNN, LSTM and GRU, unrolled over the static sequence length.
// X·W^T + Wb (+ Rb) is one MatMul over all timesteps and directions; each step then adds
// H·R^T and applies the gate equations (Wx/Rx/Wbx/Rbx: gate x's rows of W, R and B):
//   RNN:  Ht = f(Xt*Wi^T + Ht-1*Ri^T + Wbi + Rbi)
//   LSTM: it = f(Xt*Wi^T + Ht-1*Ri^T + Pi (.) Ct-1 + Wbi + Rbi)    gate order i, o, f, c
//         ft = f(Xt*Wf^T + Ht-1*Rf^T + Pf (.) Ct-1 + Wbf + Rbf)    (input_forget: ft = 1 - it)
//         ct = g(Xt*Wc^T + Ht-1*Rc^T + Wbc + Rbc)
//         Ct = ft (.) Ct-1 + it (.) ct
//         ot = f(Xt*Wo^T + Ht-1*Ro^T + Po (.) Ct + Wbo + Rbo)
//         Ht = ot (.) h(Ct)
//   GRU:  zt = f(Xt*Wz^T + Ht-1*Rz^T + Wbz + Rbz)                  gate order z, r, h
//         rt = f(Xt*Wr^T + Ht-1*Rr^T + Wbr + Rbr)
//         ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh)         linear_before_reset = 0
//         ht = g(Xt*Wh^T + rt (.) (Ht-1*Rh^T + Rbh) + Wbh)         linear_before_reset != 0
//         Ht = (1 - zt) (.) ht + zt (.) Ht-1 = ht + zt (.) (Ht-1 - ht)
// clip bounds every activation input to [-clip, clip]. The reverse direction runs t = S-1..0.
// sequence_lens masks the steps t >= len[b]: H and C keep their value and Y is 0 there; a
// sequence of length 0 ends in H = C = 0 (as onnxruntime does).
#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

enum class Cell { kRnn, kLstm, kGru };

struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The activations attribute (strings) with their alpha/beta, consumed in order by the functions
// that take them; defaults are those of the ONNX operators of the same name (Affine: 1, 0;
// ScaledTanh: 1, 1; onnxruntime uses 0 for those two and for ThresholdedRelu).
std::vector<Activation> ReadActivations(NodeImporter& n, std::vector<std::string> defaults,
                                        int64_t dirs) {
  std::vector<std::string> names;
  for (const auto& a : n.proto().attribute()) {
    if (a.name() != "activations") continue;
    if (a.type() != onnx::AttributeProto::STRINGS)
      n.Invalid("attribute 'activations' must be a list of strings");
    names.assign(a.strings().begin(), a.strings().end());
  }
  n.IgnoreAttr("activations");
  size_t per_dir = defaults.size();
  if (names.empty()) names = defaults;
  if (names.size() == per_dir && dirs == 2) {
    std::vector<std::string> first = names;
    names.insert(names.end(), first.begin(), first.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    n.Invalid(fmt::format("expected {} activations, got {}", per_dir * dirs, names.size()));
  std::vector<double> alphas, betas;
  if (n.HasAttr("activation_alpha")) alphas = n.AttrFloats("activation_alpha");
  if (n.HasAttr("activation_beta")) betas = n.AttrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> acts;
  for (const std::string& name : names) {
    Activation a{Lower(name)};
    std::optional<double> alpha, beta;
    if (a.name == "leakyrelu") {
      alpha = 0.01;
    } else if (a.name == "thresholdedrelu" || a.name == "elu") {
      alpha = 1.0;
    } else if (a.name == "hardsigmoid") {
      alpha = 0.2, beta = 0.5;
    } else if (a.name == "affine") {
      alpha = 1.0, beta = 0.0;
    } else if (a.name == "scaledtanh") {
      alpha = 1.0, beta = 1.0;
    } else if (a.name != "sigmoid" && a.name != "tanh" && a.name != "relu" &&
               a.name != "softsign" && a.name != "softplus") {
      n.Unsupported(fmt::format("activation '{}' is not supported", name));
    }
    if (alpha) a.alpha = ai < alphas.size() ? alphas[ai++] : *alpha;
    if (beta) a.beta = bi < betas.size() ? betas[bi++] : *beta;
    acts.push_back(a);
  }
  return acts;
}

class Unroller {
 public:
  explicit Unroller(NodeImporter& n, DType t) : n_(n), t_(t) {}

  ir::Value* Op(OpKind op, std::vector<ir::Value*> in, ir::Attrs attrs = {}) {
    return n_.Emit(op, std::move(in), std::move(attrs));
  }
  ir::Value* Add(ir::Value* a, ir::Value* b) { return Op(OpKind::kAdd, {a, b}); }
  ir::Value* Sub(ir::Value* a, ir::Value* b) { return Op(OpKind::kSub, {a, b}); }
  ir::Value* Mul(ir::Value* a, ir::Value* b) { return Op(OpKind::kMul, {a, b}); }
  ir::Value* MatMul(ir::Value* a, ir::Value* b) { return Op(OpKind::kMatMul, {a, b}); }
  ir::Value* Scalar(double v) { return n_.ConstScalar(t_, v); }
  ir::Value* Zeros(const Shape& s) { return n_.Const(HostTensor(t_, s)); }
  ir::Value* Transpose2D(ir::Value* x) {
    return Op(OpKind::kTranspose, {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  }
  ir::Value* Slice(ir::Value* x, Shape starts, Shape steps, Shape sizes) {
    return Op(OpKind::kSlice, {x}, {{"starts", starts}, {"steps", steps}, {"sizes", sizes}});
  }
  // x[..., start:start+size, ...] along axis.
  ir::Value* SliceAxis(ir::Value* x, size_t axis, int64_t start, int64_t size) {
    Shape starts(x->type.shape.size(), 0), steps(starts.size(), 1), sizes = x->type.shape;
    starts[axis] = start;
    sizes[axis] = size;
    return Slice(x, starts, steps, sizes);
  }
  // Concat along axis; a single input is returned as is.
  ir::Value* Concat(std::vector<ir::Value*> in, int64_t axis) {
    if (in.size() == 1) return in[0];
    return Op(OpKind::kConcat, std::move(in), {{"axis", axis}});
  }
  ir::Value* Clip(ir::Value* x, std::optional<double> clip) {
    if (!clip) return x;
    return Op(OpKind::kClip, {x}, {{"min", -*clip}, {"max", *clip}});
  }

  ir::Value* Activate(const Activation& a, ir::Value* x) {
    if (a.name == "sigmoid") return Op(OpKind::kSigmoid, {x});
    if (a.name == "tanh") return Op(OpKind::kTanh, {x});
    if (a.name == "relu") return Op(OpKind::kRelu, {x});
    if (a.name == "softplus") return Op(OpKind::kSoftplus, {x});
    if (a.name == "leakyrelu") return Op(OpKind::kLeakyRelu, {x}, {{"alpha", a.alpha}});
    if (a.name == "elu") return Op(OpKind::kElu, {x}, {{"alpha", a.alpha}});
    if (a.name == "hardsigmoid")
      return Op(OpKind::kHardSigmoid, {x}, {{"alpha", a.alpha}, {"beta", a.beta}});
    if (a.name == "thresholdedrelu") {  // x > alpha ? x : 0
      ir::Value* keep = Op(OpKind::kGreater, {x, Scalar(a.alpha)});
      return Op(OpKind::kWhere, {keep, x, Scalar(0)});
    }
    if (a.name == "affine") return Add(Mul(x, Scalar(a.alpha)), Scalar(a.beta));  // alpha*x+beta
    if (a.name == "scaledtanh")  // alpha * tanh(beta * x)
      return Mul(Op(OpKind::kTanh, {Mul(x, Scalar(a.beta))}), Scalar(a.alpha));
    if (a.name == "softsign")  // x / (1 + |x|)
      return Op(OpKind::kDiv, {x, Add(Op(OpKind::kAbs, {x}), Scalar(1))});
    n_.Unsupported(fmt::format("activation '{}' is not supported", a.name));
  }

 private:
  NodeImporter& n_;
  DType t_;
};

// One direction's recurrent weights, as the cell step reads them.
struct DirectionWeights {
  ir::Value* rt = nullptr;     // R^T [hid, gates * hid]
  ir::Value* rt_zr = nullptr;  // GRU without linear_before_reset: R_zr^T [hid, 2 * hid]
  ir::Value* rt_h = nullptr;   // and R_h^T [hid, hid]
  ir::Value* rbd = nullptr;    // GRU with linear_before_reset: Rbh [hid]
  ir::Value *pi = nullptr, *po = nullptr, *pf = nullptr;  // LSTM peepholes [hid]
};

// One step of the cell: the new H (and C for LSTM) from the step's input projection xt
// [batch, gates * hid] (X·W^T + the biases), H and C; act: the direction's activations.
template <Cell kCell>
std::pair<ir::Value*, ir::Value*> CellStep(Unroller& u, const DirectionWeights& w, ir::Value* xt,
                                           ir::Value* h, ir::Value* c, const Activation* act,
                                           int64_t hid, std::optional<double> clip,
                                           bool input_forget, bool lbr) {
  auto gate = [&](ir::Value* v, int64_t i) { return u.SliceAxis(v, 1, i * hid, hid); };
  auto activate = [&](size_t i, ir::Value* v) { return u.Activate(act[i], u.Clip(v, clip)); };
  if (kCell == Cell::kRnn) return {activate(0, u.Add(xt, u.MatMul(h, w.rt))), nullptr};
  if (kCell == Cell::kLstm) {
    ir::Value* g = u.Add(xt, u.MatMul(h, w.rt));
    ir::Value *gi = gate(g, 0), *go = gate(g, 1), *gf = gate(g, 2), *gc = gate(g, 3);
    if (w.pi) {
      gi = u.Add(gi, u.Mul(w.pi, c));
      gf = u.Add(gf, u.Mul(w.pf, c));
    }
    ir::Value* it = activate(0, gi);
    ir::Value* ft = input_forget ? u.Sub(u.Scalar(1), it) : activate(0, gf);
    ir::Value* ct = activate(1, gc);
    ir::Value* c_new = u.Add(u.Mul(ft, c), u.Mul(it, ct));
    if (w.po) go = u.Add(go, u.Mul(w.po, c_new));
    return {u.Mul(activate(0, go), u.Activate(act[2], c_new)), c_new};
  }
  ir::Value *zr = u.SliceAxis(xt, 1, 0, 2 * hid), *xh = gate(xt, 2), *hh = nullptr;
  if (lbr) {
    ir::Value* rec = u.MatMul(h, w.rt);
    ir::Value* rec_h = w.rbd ? u.Add(gate(rec, 2), w.rbd) : gate(rec, 2);
    zr = u.Add(zr, u.SliceAxis(rec, 1, 0, 2 * hid));
    hh = u.Add(xh, u.Mul(activate(0, gate(zr, 1)), rec_h));
  } else {
    zr = u.Add(zr, u.MatMul(h, w.rt_zr));
    hh = u.Add(xh, u.MatMul(u.Mul(activate(0, gate(zr, 1)), h), w.rt_h));
  }
  ir::Value* zt = activate(0, gate(zr, 0));
  hh = activate(1, hh);
  return {u.Add(hh, u.Mul(zt, u.Sub(h, hh))), nullptr};
}

template <Cell kCell>
void Recurrent(NodeImporter& n) {
  constexpr int64_t kGates = kCell == Cell::kRnn ? 1 : kCell == Cell::kLstm ? 4 : 3;
  ir::Value* x = n.RequiredInput(0);
  ir::Value* w = n.RequiredInput(1);
  ir::Value* r = n.RequiredInput(2);
  ir::Value* b = n.Input(3);
  ir::Value* seq_lens = n.Input(4);
  ir::Value* h_init = n.Input(5);
  ir::Value* c_init = kCell == Cell::kLstm ? n.Input(6) : nullptr;
  ir::Value* p = kCell == Cell::kLstm ? n.Input(7) : nullptr;

  DType t = x->type.dtype;
  if (!IsFloat(t)) n.Invalid("X must be a floating-point tensor");
  int64_t layout = n.AttrInt("layout", 0);
  if (layout != 0 && layout != 1) n.Invalid(fmt::format("layout must be 0 or 1, got {}", layout));
  if (n.opset() < 7) n.AttrInt("output_sequence", 0);  // Y is always computed
  std::string direction = n.AttrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    n.Invalid(fmt::format("unknown direction '{}'", direction));
  int64_t dirs = direction == "bidirectional" ? 2 : 1;

  const Shape& xs = x->type.shape;
  if (xs.size() != 3) n.Invalid("X must have rank 3");
  int64_t seq = layout ? xs[1] : xs[0], batch = layout ? xs[0] : xs[1], in = xs[2];
  if (r->type.shape.size() != 3) n.Invalid("R must have rank 3");
  int64_t hid = n.AttrInt("hidden_size", r->type.shape[2]);
  int64_t gh = kGates * hid;
  auto expect = [&](ir::Value* v, const Shape& s, const char* what) {
    if (v && v->type.shape != s)
      n.Invalid(
          fmt::format("{} has shape {}, expected {}", what, ShapeStr(v->type.shape), ShapeStr(s)));
    if (v && v->type.dtype != t) n.Invalid(fmt::format("{} differs in type from X", what));
  };
  Shape state = layout ? Shape{batch, dirs, hid} : Shape{dirs, batch, hid};
  expect(w, {dirs, gh, in}, "W");
  expect(r, {dirs, gh, hid}, "R");
  expect(b, {dirs, 2 * gh}, "B");
  expect(h_init, state, "initial_h");
  expect(c_init, state, "initial_c");
  expect(p, {dirs, 3 * hid}, "P");
  if (seq < 1) n.Unsupported("an empty sequence is not supported");

  std::optional<double> clip;
  if (n.HasAttr("clip")) clip = n.AttrFloat("clip");
  bool input_forget = kCell == Cell::kLstm && n.AttrInt("input_forget", 0) != 0;
  bool lbr = kCell == Cell::kGru && n.AttrInt("linear_before_reset", 0) != 0;
  std::vector<std::string> default_acts = {"Tanh"};
  if (kCell == Cell::kLstm) default_acts = {"Sigmoid", "Tanh", "Tanh"};
  if (kCell == Cell::kGru) default_acts = {"Sigmoid", "Tanh"};
  std::vector<Activation> acts = ReadActivations(n, default_acts, dirs);
  size_t acts_per_dir = default_acts.size();

  // sequence_lens: a constant equal to seq everywhere needs no mask.
  if (seq_lens) {
    if (seq_lens->type.shape != Shape{batch}) n.Invalid("sequence_lens must have shape [batch]");
    if (seq_lens->type.dtype != DType::kInt32 && seq_lens->type.dtype != DType::kInt64)
      n.Invalid("sequence_lens must be int32 or int64");
    if (seq_lens->is_constant()) {
      bool full = true;
      for (int64_t len : seq_lens->constant->ToInts()) {
        if (len < 0 || len > seq) n.Invalid(fmt::format("sequence length {} out of range", len));
        full = full && len == seq;
      }
      if (full) seq_lens = nullptr;
    }
  }

  Unroller u(n, t);
  // XW[row, d*gh + j] = (X·W_d^T + bias_d)[t, b, j]; rows are (t, b) for layout 0, (b, t) for 1.
  ir::Value* wt = u.Transpose2D(n.Reshape(w, {dirs * gh, in}));
  ir::Value* xw = u.MatMul(n.Reshape(x, {seq * batch, in}), wt);
  ir::Value* rec_bias = nullptr;  // GRU with linear_before_reset: Rbh [dirs, hid], added to H·Rh^T
  if (b) {
    ir::Value* wb = u.SliceAxis(b, 1, 0, gh);
    ir::Value* rb = u.SliceAxis(b, 1, gh, gh);
    if (lbr) {
      rec_bias = u.SliceAxis(rb, 1, 2 * hid, hid);
      rb = u.Concat({u.SliceAxis(rb, 1, 0, 2 * hid), u.Zeros({dirs, hid})}, 1);
    }
    xw = u.Add(xw, n.Reshape(u.Add(wb, rb), {dirs * gh}));
  }

  // Masks [batch, 1]: live[t] = t < len[b], nonempty = 0 < len[b].
  std::vector<ir::Value*> live;
  ir::Value* nonempty = nullptr;
  if (seq_lens) {
    auto less = [&](int64_t i) {
      ir::Value* iv = n.ConstScalar(seq_lens->type.dtype, static_cast<double>(i));
      return n.Reshape(u.Op(OpKind::kLess, {iv, seq_lens}), {batch, 1});
    };
    for (int64_t i = 0; i < seq; ++i) live.push_back(less(i));
    nonempty = live[0];
  }

  auto dir_state = [&](ir::Value* s, int64_t d) -> ir::Value* {
    if (!s) return u.Zeros({batch, hid});
    return n.Reshape(u.SliceAxis(s, layout ? 1 : 0, d, 1), {batch, hid});
  };

  std::vector<ir::Value*> ys, hs, cs;  // per direction: Y, final H, final C
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation* act = &acts[static_cast<size_t>(d) * acts_per_dir];
    DirectionWeights dw;
    ir::Value* rd = n.Reshape(u.SliceAxis(r, 0, d, 1), {gh, hid});
    dw.rt = u.Transpose2D(rd);
    if (kCell == Cell::kGru && !lbr) {
      dw.rt_zr = u.Transpose2D(u.SliceAxis(rd, 0, 0, 2 * hid));
      dw.rt_h = u.Transpose2D(u.SliceAxis(rd, 0, 2 * hid, hid));
    }
    if (rec_bias) dw.rbd = n.Reshape(u.SliceAxis(rec_bias, 0, d, 1), {hid});
    if (p) {
      ir::Value* pd = n.Reshape(u.SliceAxis(p, 0, d, 1), {3 * hid});
      dw.pi = u.SliceAxis(pd, 0, 0, hid);
      dw.po = u.SliceAxis(pd, 0, hid, hid);
      dw.pf = u.SliceAxis(pd, 0, 2 * hid, hid);
    }
    ir::Value* h = dir_state(h_init, d);
    ir::Value* c = kCell == Cell::kLstm ? dir_state(c_init, d) : nullptr;
    std::vector<ir::Value*> y(seq);
    for (int64_t k = 0; k < seq; ++k) {
      int64_t step = reverse ? seq - 1 - k : k;
      ir::Value* xt = layout ? u.Slice(xw, {step, d * gh}, {seq, 1}, {batch, gh})
                             : u.Slice(xw, {step * batch, d * gh}, {1, 1}, {batch, gh});
      auto [h_new, c_new] = CellStep<kCell>(u, dw, xt, h, c, act, hid, clip, input_forget, lbr);
      if (seq_lens) {  // steps past the sequence end keep the state and output 0
        h = u.Op(OpKind::kWhere, {live[step], h_new, h});
        if (c) c = u.Op(OpKind::kWhere, {live[step], c_new, c});
        y[step] = u.Op(OpKind::kWhere, {live[step], h_new, u.Scalar(0)});
      } else {
        h = y[step] = h_new;
        c = c_new;
      }
    }
    // Y: [seq, dirs, batch, hid], or [batch, seq, dirs, hid] for layout 1.
    for (ir::Value*& v : y)
      v = n.Reshape(v, layout ? Shape{batch, 1, 1, hid} : Shape{1, 1, batch, hid});
    ys.push_back(u.Concat(y, layout ? 1 : 0));
    if (seq_lens) {  // an empty sequence ends in H = C = 0
      h = u.Op(OpKind::kWhere, {nonempty, h, u.Scalar(0)});
      if (c) c = u.Op(OpKind::kWhere, {nonempty, c, u.Scalar(0)});
    }
    Shape one = layout ? Shape{batch, 1, hid} : Shape{1, batch, hid};
    hs.push_back(n.Reshape(h, one));
    if (c) cs.push_back(n.Reshape(c, one));
  }
  n.SetOutput(0, u.Concat(ys, layout ? 2 : 1));
  n.SetOutput(1, u.Concat(hs, layout ? 1 : 0));
  if (kCell == Cell::kLstm) n.SetOutput(2, u.Concat(cs, layout ? 1 : 0));
}

}  // namespace

void RegisterRnnOps(Registry& r) {
  r["RNN"] = Recurrent<Cell::kRnn>;
  r["LSTM"] = Recurrent<Cell::kLstm>;
  r["GRU"] = Recurrent<Cell::kGru>;
}

}  // namespace texel::onnx_frontend
