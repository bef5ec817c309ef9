// Einsum, decomposed into ReduceSum / Transpose / Reshape / MatMul. Operands are contracted
// pairwise from left to right; for each pair, labels split into batch (both operands and kept),
// contracted (both, not kept), left-only and right-only, and the pair becomes one batched
// MatMul [B, L, K] x [B, K, R]. A label repeated within one operand takes the diagonal first.
#include <algorithm>
#include <map>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

struct Term {
  ir::Value* value;
  std::string labels;  // one char per dim
};

// Expands "..." into fresh upper-case-free labels (digits are not valid einsum labels).
std::string ExpandEllipsis(NodeImporter& n, const std::string& term, size_t rank, int max_ell) {
  size_t pos = term.find("...");
  if (pos == std::string::npos) {
    if (term.size() != rank) n.Invalid(fmt::format("term '{}' does not match rank {}", term, rank));
    return term;
  }
  size_t named = term.size() - 3;
  if (rank < named) n.Invalid(fmt::format("term '{}' has more labels than dims", term));
  size_t ell = rank - named;
  std::string fill;
  for (size_t k = 0; k < ell; ++k) fill += static_cast<char>('0' + (max_ell - ell + k));
  return term.substr(0, pos) + fill + term.substr(pos + 3);
}

ir::Value* Permute(NodeImporter& n, ir::Value* v, const std::string& from, const std::string& to) {
  if (from == to) return v;
  std::vector<int64_t> perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  return n.Emit(OpKind::kTranspose, {v}, {{"perm", perm}});
}

// Sums out labels of t that are not in `keep`.
Term SumOut(NodeImporter& n, Term t, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string rest;
  for (size_t i = 0; i < t.labels.size(); ++i) {
    if (keep.find(t.labels[i]) == std::string::npos)
      axes.push_back(static_cast<int64_t>(i));
    else
      rest += t.labels[i];
  }
  if (axes.empty()) return t;
  t.value = n.Emit(OpKind::kReduceSum, {t.value}, {{"axes", axes}, {"keepdims", int64_t{0}}});
  t.labels = rest;
  return t;
}

// Takes diagonals until no label repeats in t: the two dims of a repeated label move last,
// merge into one of n*n elements, and a Slice with step n+1 keeps the diagonal.
Term Diagonal(NodeImporter& n, Term t) {
  for (size_t i = 0; i < t.labels.size(); ++i) {
    size_t j = t.labels.find(t.labels[i], i + 1);
    if (j == std::string::npos) continue;
    const Shape& s = t.value->type.shape;
    if (s[i] != s[j])
      n.Invalid(fmt::format("label '{}' has dims {} and {}", t.labels[i], s[i], s[j]));
    std::vector<int64_t> perm;
    std::string rest;
    Shape merged;
    for (size_t k = 0; k < s.size(); ++k)
      if (k != i && k != j) {
        perm.push_back(static_cast<int64_t>(k));
        rest += t.labels[k];
        merged.push_back(s[k]);
      }
    perm.push_back(static_cast<int64_t>(i));
    perm.push_back(static_cast<int64_t>(j));
    ir::Value* v = n.Emit(OpKind::kTranspose, {t.value}, {{"perm", perm}});
    int64_t d = s[i];
    merged.push_back(d * d);
    v = n.Reshape(v, merged);
    std::vector<int64_t> starts(merged.size(), 0), steps(merged.size(), 1), sizes = merged;
    steps.back() = d + 1;
    sizes.back() = d;
    v = n.Emit(OpKind::kSlice, {v}, {{"starts", starts}, {"steps", steps}, {"sizes", sizes}});
    return Diagonal(n, {v, rest + t.labels[i]});
  }
  return t;
}

int64_t Dim(const Term& t, char c) { return t.value->type.shape[t.labels.find(c)]; }

Term Contract(NodeImporter& n, Term a, Term b, const std::string& keep) {
  a = SumOut(n, a, keep + b.labels);
  b = SumOut(n, b, keep + a.labels);
  std::string batch, contr, left, right;
  for (char c : a.labels) {
    bool in_b = b.labels.find(c) != std::string::npos, kept = keep.find(c) != std::string::npos;
    (in_b ? (kept ? batch : contr) : left) += c;
  }
  for (char c : b.labels)
    if (a.labels.find(c) == std::string::npos) right += c;
  for (char c : batch + contr)
    if (Dim(a, c) != Dim(b, c)) n.Unsupported("einsum with broadcast dims is not supported");
  auto prod = [](const Term& t, const std::string& ls) {
    int64_t p = 1;
    for (char c : ls) p *= Dim(t, c);
    return p;
  };
  int64_t B = prod(a, batch), L = prod(a, left), K = prod(a, contr), R = prod(b, right);
  ir::Value* am = n.Reshape(Permute(n, a.value, a.labels, batch + left + contr), {B, L, K});
  ir::Value* bm = n.Reshape(Permute(n, b.value, b.labels, batch + contr + right), {B, K, R});
  Shape out;
  for (char c : batch + left) out.push_back(Dim(a, c));
  for (char c : right) out.push_back(Dim(b, c));
  return {n.Reshape(n.Emit(OpKind::kMatMul, {am, bm}), out), batch + left + right};
}

void Einsum(NodeImporter& n) {
  std::string eq;
  for (char c : n.AttrString("equation"))
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t p = 0;;) {
    size_t q = lhs.find(',', p);
    terms.push_back(lhs.substr(p, q == std::string::npos ? q : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (terms.size() != n.num_inputs())
    n.Invalid("the equation's operand count differs from the inputs");
  int max_ell = 0;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].find("...") != std::string::npos)
      max_ell = std::max<int>(
          max_ell, static_cast<int>(n.RequiredInput(i)->type.shape.size() + 3 - terms[i].size()));
  std::vector<Term> ops;
  std::map<char, int> count;  // label occurrences over all operands, before diagonals
  for (size_t i = 0; i < terms.size(); ++i) {
    ir::Value* v = n.RequiredInput(i);
    std::string ls = ExpandEllipsis(n, terms[i], v->type.shape.size(), max_ell);
    for (char c : ls) ++count[c];
    ops.push_back(Diagonal(n, {v, ls}));
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    size_t pos = out.find("...");
    if (pos != std::string::npos) {
      std::string fill;
      for (int k = 0; k < max_ell; ++k) fill += static_cast<char>('0' + k);
      out = out.substr(0, pos) + fill + out.substr(pos + 3);
    }
  } else {  // implicit: ellipsis dims, then labels seen once, in alphabetical order
    for (int k = 0; k < max_ell; ++k) out += static_cast<char>('0' + k);
    for (const auto& [c, k] : count)
      if (k == 1 && !(c >= '0' && c <= '9')) out += c;
  }
  Term acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::string later = out;  // labels still needed after this step
    for (size_t j = i + 1; j < ops.size(); ++j) later += ops[j].labels;
    acc = Contract(n, acc, ops[i], later);
  }
  acc = SumOut(n, acc, out);
  if (acc.labels.size() != out.size()) n.Invalid("output labels must come from the inputs");
  ir::Value* y = Permute(n, acc.value, acc.labels, out);
  if (y == n.RequiredInput(0)) y = n.Emit(OpKind::kCopy, {y});
  n.SetOutput(0, y);
}

// DepthToSpace / SpaceToDepth are Reshape -> Transpose -> Reshape.
void DepthToSpace(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& s = x->type.shape;
  int64_t b = n.AttrInt("blocksize");
  if (s.size() != 4 || b <= 0 || s[1] % (b * b) != 0)
    n.Invalid("needs [N, C, H, W] with C % b^2 == 0");
  bool crd = n.AttrString("mode", "DCR") == "CRD";
  int64_t c = s[1] / (b * b);
  ir::Value* r =
      n.Reshape(x, crd ? Shape{s[0], c, b, b, s[2], s[3]} : Shape{s[0], b, b, c, s[2], s[3]});
  std::vector<int64_t> perm =
      crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  ir::Value* t = n.Emit(OpKind::kTranspose, {r}, {{"perm", perm}});
  n.SetOutput(0, n.Reshape(t, {s[0], c, s[2] * b, s[3] * b}));
}

void SpaceToDepth(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& s = x->type.shape;
  int64_t b = n.AttrInt("blocksize");
  if (s.size() != 4 || b <= 0 || s[2] % b != 0 || s[3] % b != 0)
    n.Invalid("needs [N, C, H, W] with H and W divisible by the block size");
  ir::Value* r = n.Reshape(x, {s[0], s[1], s[2] / b, b, s[3] / b, b});
  ir::Value* t =
      n.Emit(OpKind::kTranspose, {r}, {{"perm", std::vector<int64_t>{0, 3, 5, 1, 2, 4}}});
  n.SetOutput(0, n.Reshape(t, {s[0], s[1] * b * b, s[2] / b, s[3] / b}));
}

}  // namespace

void RegisterEinsumOps(Registry& r) {
  r["Einsum"] = Einsum;
  r["DepthToSpace"] = DepthToSpace;
  r["SpaceToDepth"] = SpaceToDepth;
}

}  // namespace texel::onnx_frontend
