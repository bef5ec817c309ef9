#include "ir/index_map.h"

#include "core/error.h"

namespace texel::ir {

IndexMap IndexMap::Contiguous(const Shape& shape) { return {shape, Strides(shape), 0}; }

IndexMap IndexMap::Permuted(const std::vector<int64_t>& perm) const {
  IndexMap m;
  m.offset = offset;
  for (int64_t p : perm) {
    m.shape.push_back(shape.at(p));
    m.strides.push_back(strides.at(p));
  }
  return m;
}

IndexMap IndexMap::Sliced(const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                          const Shape& sizes) const {
  IndexMap m{sizes, strides, offset};
  for (size_t d = 0; d < shape.size(); ++d) {
    m.offset += starts.at(d) * strides[d];
    m.strides[d] = strides[d] * steps.at(d);
  }
  return m;
}

// As numpy's reshape without a copy: dims of size 1 are dropped, then each run of old dims
// whose product is a run of new dims must be laid out one after the other (stride of dim k =
// size of k+1 * stride of k+1); the new run then takes the run's innermost stride.
std::optional<IndexMap> IndexMap::Reshaped(const Shape& to) const {
  if (NumElements(to) != NumElements(shape)) return std::nullopt;
  std::vector<int64_t> od, os, nd;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) {
      od.push_back(shape[d]);
      os.push_back(strides[d]);
    }
  for (int64_t n : to)
    if (n != 1) nd.push_back(n);
  if (NumElements(to) == 0) return std::nullopt;
  std::vector<int64_t> ns(nd.size());
  size_t oi = 0, ni = 0;
  while (oi < od.size() && ni < nd.size()) {
    int64_t np = nd[ni], op = od[oi];
    size_t nj = ni + 1, oj = oi + 1;
    while (np != op) {
      if (np < op)
        np *= nd[nj++];
      else
        op *= od[oj++];
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (os[k] != od[k + 1] * os[k + 1]) return std::nullopt;
    ns[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * nd[k];
    ni = nj;
    oi = oj;
  }
  IndexMap m{to, std::vector<int64_t>(to.size(), 0), offset};
  for (size_t d = 0, k = 0; d < to.size(); ++d)
    if (to[d] != 1) m.strides[d] = ns[k++];
  return m;
}

bool IndexMap::IsContiguous() const {
  if (offset != 0) return false;
  std::vector<int64_t> s = Strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && s[d] != strides[d]) return false;
  return true;
}

bool IndexMap::InBounds(int64_t elements) const {
  if (strides.size() != shape.size()) return false;
  if (NumElements(shape) == 0) return true;
  int64_t lo = offset, hi = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) return false;
    (strides[d] < 0 ? lo : hi) += (shape[d] - 1) * strides[d];
  }
  return lo >= 0 && hi < elements;
}

void IndexMap::Store(Attrs& attrs, const std::string& prefix) const {
  attrs.Set(prefix + "_shape", std::vector<int64_t>(shape.begin(), shape.end()));
  attrs.Set(prefix + "_strides", strides);
  attrs.Set(prefix + "_offset", offset);
}

IndexMap IndexMap::Load(const Attrs& attrs, const std::string& prefix, const Shape& base) {
  if (!attrs.Has(prefix + "_shape")) return Contiguous(base);
  const std::vector<int64_t>& s = attrs.Ints(prefix + "_shape");
  return {Shape(s.begin(), s.end()), attrs.Ints(prefix + "_strides"),
          attrs.Int(prefix + "_offset")};
}

bool ReadsThroughView(const Node& n) {
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (n.attrs.Has(fmt::format("in{}_shape", k))) return true;
  return false;
}

namespace {

// The view of p's output given the view of its input, when the strides can express it.
std::optional<IndexMap> Apply(const Node& p, const IndexMap& in) {
  const Shape& out = p.outputs[0]->type.shape;
  switch (p.op) {
    case OpKind::kTranspose: return in.Permuted(p.attrs.Ints("perm"));
    case OpKind::kSlice: return in.Sliced(p.attrs.Ints("starts"), p.attrs.Ints("steps"), out);
    case OpKind::kReshape: return in.Reshaped(out);
    case OpKind::kGather: {  // one constant index: a slice of one along the axis
      const Value* idx = p.inputs[1];
      int64_t axis = p.attrs.Int("axis");
      if (!idx->is_constant() || idx->constant->size() != 1 || idx->type.shape.size() > 1)
        return std::nullopt;
      int64_t i = idx->constant->GetInt(0), n = in.shape.at(axis);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      IndexMap m = in;
      m.offset += i * in.strides[axis];
      m.shape[axis] = 1;
      return m.Reshaped(out);
    }
    default: return std::nullopt;
  }
}

}  // namespace

IndexMap ViewThroughMovement(Value* v, Value** source, std::vector<const Node*>* folded) {
  const Node* p = v->producer;
  bool movement = p && (p->op == OpKind::kTranspose || p->op == OpKind::kSlice ||
                        p->op == OpKind::kReshape || p->op == OpKind::kGather);
  if (movement && !p->inputs[0]->is_image() && !v->is_image()) {
    Value* src = nullptr;
    std::vector<const Node*> deeper;
    if (auto m = Apply(*p, ViewThroughMovement(p->inputs[0], &src, &deeper))) {
      *source = src;
      *folded = std::move(deeper);
      folded->push_back(p);
      return *m;
    }
    // The deeper view cannot take this step; p's own input as it is in memory may.
    if (auto m = Apply(*p, IndexMap::Contiguous(p->inputs[0]->type.shape))) {
      *source = p->inputs[0];
      *folded = {p};
      return *m;
    }
  }
  *source = v;
  folded->clear();
  return IndexMap::Contiguous(v->type.shape);
}

}  // namespace texel::ir
