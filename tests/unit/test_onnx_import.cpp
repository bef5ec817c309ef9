// Tests for the ONNX frontend on models built in C++ with the ONNX protobuf classes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.h"
#include "frontend/onnx/importer.h"
#include "ir/graph.h"
#include "ir/verifier.h"
#include "kernel_test_util.h"
#include "temp_dir.h"

namespace texel::onnx_frontend {
namespace {

namespace fs = std::filesystem;
using Dim = std::variant<int64_t, std::string>;

// Builds a single-graph ModelProto of the default domain.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("texel-test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g()->set_name("test");
  }

  void Input(const std::string& name, int elem_type, const std::vector<Dim>& dims) {
    auto* vi = g()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (const Dim& d : dims) {
      auto* dim = shape->add_dim();
      if (const int64_t* v = std::get_if<int64_t>(&d)) {
        dim->set_dim_value(*v);
      } else {
        dim->set_dim_param(std::get<std::string>(d));
      }
    }
  }
  void Output(const std::string& name) { g()->add_output()->set_name(name); }

  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name) {
    auto* n = g()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }

  onnx::TensorProto* Initializer(const std::string& name, const HostTensor& t) {
    auto* p = g()->add_initializer();
    p->set_name(name);
    p->set_data_type(t.dtype == DType::kInt64 ? onnx::TensorProto::INT64
                                              : onnx::TensorProto::FLOAT);
    for (int64_t d : t.shape) p->add_dims(d);
    p->set_raw_data(std::string(t.bytes.begin(), t.bytes.end()));
    return p;
  }

  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const {
    std::string s;
    EXPECT_TRUE(model_.SerializeToString(&s));
    return s;
  }

 private:
  onnx::GraphProto* g() { return model_.mutable_graph(); }
  onnx::ModelProto model_;
};

void AttrInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void AttrFloat(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

HostTensor RandomF32(Shape s, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  HostTensor t(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

HostTensor I64(Shape s, const std::vector<int64_t>& v) {
  HostTensor t(DType::kInt64, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

std::unique_ptr<ir::Graph> Import(const ModelBuilder& m, const ImportOptions& opts = {}) {
  return ImportOnnxBytes(m.Bytes(), ".", opts);
}

// Expects f to throw texel::Error with the given code; returns its what() text.
std::string ExpectError(const std::function<void()>& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected texel::Error(" << ErrorCodeName(code) << ")";
  return "";
}

int CountOps(const ir::Graph& g, ir::OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op == op;
  return n;
}

const ir::Node* FindOp(const ir::Graph& g, ir::OpKind op) {
  for (const auto& node : g.nodes())
    if (node->op == op) return node.get();
  return nullptr;
}

using testing::TempDir;

void WriteFile(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

TEST(OnnxImportTest, ShapeGatherConcatReshapeFolds) {
  // y = Reshape(x, Concat(Gather(Shape(x), [0]), [-1])): x [2,3,4] -> [2,12].
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  m.Initializer("idx", I64({1}, {0}));
  m.Initializer("minus_one", I64({1}, {-1}));
  m.Node("Shape", {"x"}, {"s"}, "shape");
  AttrInt(m.Node("Gather", {"s", "idx"}, {"d0"}, "gather"), "axis", 0);
  AttrInt(m.Node("Concat", {"d0", "minus_one"}, {"target"}, "concat"), "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.Output("y");
  auto g = Import(m);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kGather), 0);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kConcat), 0);
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0]->op, ir::OpKind::kReshape);
  EXPECT_EQ(g->nodes()[0]->inputs[0], g->inputs()[0]);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name, "y");
  EXPECT_EQ(g->outputs()[0]->type.shape, (Shape{2, 12}));
  // No shape constants survive either.
  for (const auto& v : g->values()) EXPECT_FALSE(v->is_constant()) << v->name;
}

TEST(OnnxImportTest, GemmTransBFoldsTheTranspose) {
  ModelBuilder m;
  m.Input("a", onnx::TensorProto::FLOAT, {2, 3});
  HostTensor b = RandomF32({4, 3}, 11);
  m.Initializer("b", b);
  m.Initializer("c", RandomF32({4}, 12));
  AttrInt(m.Node("Gemm", {"a", "b", "c"}, {"y"}, "gemm"), "transB", 1);
  m.Output("y");
  auto g = Import(m);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kTranspose), 0);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kMatMul), 1);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kAdd), 1);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kMul), 0);  // alpha = beta = 1
  EXPECT_EQ(g->nodes().size(), 2u);
  const ir::Node* mm = FindOp(*g, ir::OpKind::kMatMul);
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->inputs[0], g->inputs()[0]);
  const ir::Value* bt = mm->inputs[1];
  ASSERT_TRUE(bt->is_constant());
  ASSERT_EQ(bt->type.shape, (Shape{3, 4}));
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t n = 0; n < 4; ++n)
      EXPECT_EQ(bt->constant->data<float>()[k * 4 + n], b.data<float>()[n * 3 + k]);
  EXPECT_EQ(g->outputs()[0]->type.shape, (Shape{2, 4}));
}

TEST(OnnxImportTest, BatchNormalizationFoldsToMulAdd) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {1, 3, 2, 2});
  HostTensor scale = RandomF32({3}, 21), bias = RandomF32({3}, 22), mean = RandomF32({3}, 23);
  HostTensor var = RandomF32({3}, 24, 0.5f, 2.0f);
  m.Initializer("scale", scale);
  m.Initializer("bias", bias);
  m.Initializer("mean", mean);
  m.Initializer("var", var);
  const float eps = 1e-3f;
  AttrFloat(m.Node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn"),
            "epsilon", eps);
  m.Output("y");
  auto g = Import(m);
  ASSERT_EQ(g->nodes().size(), 2u);
  const ir::Node* mul = g->nodes()[0].get();
  const ir::Node* add = g->nodes()[1].get();
  ASSERT_EQ(mul->op, ir::OpKind::kMul);
  ASSERT_EQ(add->op, ir::OpKind::kAdd);
  EXPECT_EQ(mul->inputs[0], g->inputs()[0]);
  EXPECT_EQ(add->inputs[0], mul->outputs[0]);
  const ir::Value* s = mul->inputs[1];
  const ir::Value* t = add->inputs[1];
  ASSERT_TRUE(s->is_constant());
  ASSERT_TRUE(t->is_constant());
  EXPECT_EQ(s->type.shape, (Shape{3, 1, 1}));
  EXPECT_EQ(t->type.shape, (Shape{3, 1, 1}));
  for (int c = 0; c < 3; ++c) {
    double sc = scale.data<float>()[c] / std::sqrt(double{var.data<float>()[c]} + eps);
    double tc = bias.data<float>()[c] - mean.data<float>()[c] * sc;
    EXPECT_NEAR(s->constant->data<float>()[c], sc, 1e-5 * std::fabs(sc) + 1e-6) << c;
    EXPECT_NEAR(t->constant->data<float>()[c], tc, 1e-5 * std::fabs(tc) + 1e-6) << c;
  }
}

TEST(OnnxImportTest, UnknownOpNamesOpAndNode) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2});
  m.Node("FancyOp", {"x"}, {"y"}, "my_node");
  m.Output("y");
  std::string msg = ExpectError([&] { Import(m); }, ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("FancyOp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("my_node"), std::string::npos) << msg;
}

TEST(OnnxImportTest, UnusedAttributeIsUnsupported) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2});
  AttrInt(m.Node("Relu", {"x"}, {"y"}, "relu1"), "foo", 3);
  m.Output("y");
  std::string msg = ExpectError([&] { Import(m); }, ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("'foo'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("relu1"), std::string::npos) << msg;
}

TEST(OnnxImportTest, Opset18IsUnsupported) {
  ModelBuilder m(18);
  m.Input("x", onnx::TensorProto::FLOAT, {2});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y");
  std::string msg = ExpectError([&] { Import(m); }, ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("18"), std::string::npos) << msg;
  ModelBuilder ok(17);
  ok.Input("x", onnx::TensorProto::FLOAT, {2});
  ok.Node("Relu", {"x"}, {"y"}, "relu");
  ok.Output("y");
  EXPECT_NO_THROW(Import(ok));
}

TEST(OnnxImportTest, SymbolicBatchDimDefaultsToOne) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {std::string("N"), 3});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y");
  auto g = Import(m);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->type.shape, (Shape{1, 3}));
  EXPECT_EQ(g->outputs()[0]->type.shape, (Shape{1, 3}));
  ImportOptions opts;
  opts.input_shapes["x"] = {5, 3};
  EXPECT_EQ(Import(m, opts)->inputs()[0]->type.shape, (Shape{5, 3}));
}

TEST(OnnxImportTest, SymbolicNonBatchDimNeedsAShape) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2, std::string("C")});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y");
  std::string msg = ExpectError([&] { Import(m); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'C'"), std::string::npos) << msg;
  ImportOptions opts;
  opts.input_shapes["x"] = {2, 7};
  EXPECT_EQ(Import(m, opts)->outputs()[0]->type.shape, (Shape{2, 7}));
}

TEST(OnnxImportTest, ReshapeByGraphInputNeedsFreezing) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2, 6});
  m.Input("shape", onnx::TensorProto::INT64, {2});
  m.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  m.Output("y");
  std::string msg = ExpectError([&] { Import(m); }, ErrorCode::kNotConstant);
  EXPECT_NE(msg.find("'shape'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;

  ImportOptions opts;
  opts.frozen_inputs["shape"] = I64({2}, {3, -1});
  auto g = Import(m, opts);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->name, "x");
  EXPECT_EQ(g->outputs()[0]->type.shape, (Shape{3, 4}));
  EXPECT_NO_THROW(ir::Verify(*g));
}

// A model y = x + W whose initializer W [2,3] lives in an external file at `location`, bytes
// [offset, offset + length).
ModelBuilder ExternalModel(const std::string& location, const std::string& offset = "16",
                           const std::string& length = "24") {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2, 3});
  auto* w = m.model().mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* key, const std::string& value) {
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  kv("location", location);
  kv("offset", offset);
  kv("length", length);
  m.Node("Add", {"x", "W"}, {"y"}, "add");
  m.Output("y");
  return m;
}

TEST(OnnxImportTest, ExternalDataIsRead) {
  TempDir dir;
  HostTensor w = RandomF32({2, 3}, 31);
  std::string data =
      std::string(16, 'J') + std::string(w.bytes.begin(), w.bytes.end()) + std::string(8, 'T');
  WriteFile(dir.path() / "weights.bin", data);
  WriteFile(dir.path() / "model.onnx", ExternalModel("weights.bin").Bytes());
  auto g = ImportOnnxFile((dir.path() / "model.onnx").string(), {});
  const ir::Node* add = FindOp(*g, ir::OpKind::kAdd);
  ASSERT_NE(add, nullptr);
  const ir::Value* c = add->inputs[1];
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->name, "W");
  EXPECT_EQ(c->type, (ir::TensorType{DType::kFloat32, {2, 3}}));
  EXPECT_EQ(c->constant->bytes, w.bytes);
  // A location in a subfolder of the model's folder is fine too.
  fs::create_directories(dir.path() / "data");
  WriteFile(dir.path() / "data" / "w.bin", data);
  WriteFile(dir.path() / "model2.onnx", ExternalModel("data/w.bin").Bytes());
  g = ImportOnnxFile((dir.path() / "model2.onnx").string(), {});
  add = FindOp(*g, ir::OpKind::kAdd);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->inputs[1]->constant->bytes, w.bytes);
}

TEST(OnnxImportTest, MissingExternalFileIsNotFound) {
  TempDir dir;
  WriteFile(dir.path() / "model.onnx", ExternalModel("weights.bin").Bytes());
  std::string msg = ExpectError([&] { ImportOnnxFile((dir.path() / "model.onnx").string(), {}); },
                                ErrorCode::kNotFound);
  EXPECT_NE(msg.find("weights.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
}

TEST(OnnxImportTest, ExternalLocationOutsideTheModelFolderIsRejected) {
  TempDir dir;
  fs::create_directories(dir.path() / "model");
  HostTensor w = RandomF32({2, 3}, 32);
  // The file exists, but outside the model's folder.
  WriteFile(dir.path() / "weights.bin",
            std::string(16, 'J') + std::string(w.bytes.begin(), w.bytes.end()));
  WriteFile(dir.path() / "model" / "model.onnx", ExternalModel("../weights.bin").Bytes());
  std::string msg =
      ExpectError([&] { ImportOnnxFile((dir.path() / "model" / "model.onnx").string(), {}); },
                  ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("../weights.bin"), std::string::npos) << msg;
  WriteFile(dir.path() / "model" / "model.onnx",
            ExternalModel((dir.path() / "weights.bin").string()).Bytes());
  ExpectError([&] { ImportOnnxFile((dir.path() / "model" / "model.onnx").string(), {}); },
              ErrorCode::kInvalidModel);
}

TEST(OnnxImportTest, BadExternalOffsetOrLengthIsInvalidModel) {
  TempDir dir;
  HostTensor w = RandomF32({2, 3}, 33);
  WriteFile(dir.path() / "weights.bin",
            std::string(16, 'J') + std::string(w.bytes.begin(), w.bytes.end()));
  fs::path model = dir.path() / "model.onnx";
  // Past the end of the file, and a length that disagrees with the tensor's type.
  WriteFile(model, ExternalModel("weights.bin", "32", "24").Bytes());
  ExpectError([&] { ImportOnnxFile(model.string(), {}); }, ErrorCode::kInvalidModel);
  WriteFile(model, ExternalModel("weights.bin", "16", "20").Bytes());
  ExpectError([&] { ImportOnnxFile(model.string(), {}); }, ErrorCode::kInvalidModel);
}

TEST(OnnxImportTest, DamagedExternalDataIsATexelError) {
  TempDir dir;
  HostTensor w = RandomF32({2, 3}, 34);
  WriteFile(dir.path() / "weights.bin",
            std::string(16, 'J') + std::string(w.bytes.begin(), w.bytes.end()));
  fs::path model = dir.path() / "model.onnx";
  // A damaged model must not escape as a std::exception or allocate what it claims.
  for (const auto& [offset, length] : std::vector<std::pair<std::string, std::string>>{
           {"sixteen", "24"}, {"16", "1000000000000000"}}) {
    WriteFile(model, ExternalModel("weights.bin", offset, length).Bytes());
    try {
      ImportOnnxFile(model.string(), {});
      ADD_FAILURE() << "offset " << offset << ", length " << length << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "offset " << offset << ", length " << length
                    << ": not a texel::Error: " << e.what();
    }
  }
}

// Control flow. Subgraphs are built directly as GraphProto attributes.
onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

onnx::GraphProto* AttrGraph(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

HostTensor Bool1(bool v) {
  HostTensor t(DType::kBool, {1});
  t.bytes[0] = v;
  return t;
}

TEST(OnnxImportTest, IfWithRunTimeConditionSelectsBothBranchesWithWhere) {
  ModelBuilder m;
  m.Input("c", onnx::TensorProto::BOOL, {1});
  m.Input("x", onnx::TensorProto::FLOAT, {5});
  auto* node = m.Node("If", {"c"}, {"y"}, "if");
  AddNode(AttrGraph(node, "then_branch"), "Mul", {"x", "x"}, {"t"});  // x from the outer scope
  node->mutable_attribute(0)->mutable_g()->add_output()->set_name("t");
  AddNode(AttrGraph(node, "else_branch"), "Neg", {"x"}, {"e"});
  node->mutable_attribute(1)->mutable_g()->add_output()->set_name("e");
  m.Output("y");
  EXPECT_EQ(CountOps(*Import(m), ir::OpKind::kWhere), 1);
  HostTensor x = RandomF32({5}, 31);
  for (bool c : {true, false}) {
    auto got = testing::CompileAndRun(Import(m), {{"c", Bool1(c)}, {"x", x}});
    for (int i = 0; i < 5; ++i) {
      float xi = x.data<float>()[i];
      EXPECT_FLOAT_EQ(got[0].data<float>()[i], c ? xi * xi : -xi) << c << " " << i;
    }
  }
  // A constant condition imports only the chosen branch.
  ImportOptions opts;
  opts.frozen_inputs["c"] = Bool1(false);
  auto g = Import(m, opts);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kWhere), 0);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kNeg), 1);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kMul), 0);
}

// If nodes nested `depth` deep, each one's then_branch holding the next; the condition is a
// constant (true), so that one branch per level is imported. y = x.
ModelBuilder NestedIfs(int depth) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {3});
  auto* cond = m.model().mutable_graph()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->set_raw_data(std::string(1, '\1'));
  onnx::NodeProto* node = m.Node("If", {"cond"}, {"y"}, "if1");
  for (int d = 1;; ++d) {
    std::string t = fmt::format("t{}", d), e = fmt::format("e{}", d);
    onnx::GraphProto* then_g = AttrGraph(node, "then_branch");
    onnx::GraphProto* else_g = AttrGraph(node, "else_branch");
    AddNode(else_g, "Neg", {"x"}, {e});
    else_g->add_output()->set_name(e);
    then_g->add_output()->set_name(t);
    if (d == depth) {
      AddNode(then_g, "Identity", {"x"}, {t});
      break;
    }
    node = AddNode(then_g, "If", {"cond"}, {t});
    node->set_name(fmt::format("if{}", d + 1));
  }
  m.Output("y");
  return m;
}

// Subgraphs nest up to Limits::subgraph_depth (16) levels; one more is refused before the
// recursion goes on, naming the limit and the nodes on the way down.
TEST(OnnxImportTest, SubgraphsNestedPastTheLimitAreRefused) {
  EXPECT_EQ(CountOps(*Import(NestedIfs(16)), ir::OpKind::kNeg), 0);
  std::string msg = ExpectError([&] { Import(NestedIfs(17)); }, ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("subgraphs nested 17 deep, over the limit of 16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TEXEL_MAX_SUBGRAPH_DEPTH"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'if17' (If)"), std::string::npos) << msg;
}

// Loop(M=3, cond=true, y0=x): y = y + x each step, scan output y; runs unrolled on the device.
ModelBuilder LoopModel(bool runtime_trip_count) {
  ModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {4});
  if (runtime_trip_count)
    m.Input("M", onnx::TensorProto::INT64, {});
  else
    m.Initializer("M", I64({}, {3}));
  auto* cond = m.model().mutable_graph()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->set_raw_data(std::string(1, '\1'));
  auto* node = m.Node("Loop", {"M", "cond", "x"}, {"y", "ys"}, "loop");
  onnx::GraphProto* body = AttrGraph(node, "body");
  for (const char* in : {"i", "c_in", "y_in"}) body->add_input()->set_name(in);
  AddNode(body, "Identity", {"c_in"}, {"c_out"});
  AddNode(body, "Add", {"y_in", "x"}, {"y_out"});
  AddNode(body, "Identity", {"y_out"}, {"scan"});
  for (const char* out : {"c_out", "y_out", "scan"}) body->add_output()->set_name(out);
  m.Output("y");
  m.Output("ys");
  return m;
}

TEST(OnnxImportTest, LoopWithConstantTripCountIsUnrolled) {
  ModelBuilder m = LoopModel(false);
  auto g = Import(m);
  EXPECT_EQ(CountOps(*g, ir::OpKind::kAdd), 3);
  HostTensor x = RandomF32({4}, 32);
  auto got = testing::CompileAndRun(std::move(g), {{"x", x}});
  ASSERT_EQ(got[1].shape, (Shape{3, 4}));
  for (int i = 0; i < 4; ++i) {
    float xi = x.data<float>()[i];
    EXPECT_NEAR(got[0].data<float>()[i], 4 * xi, 1e-6) << i;
    for (int step = 0; step < 3; ++step)
      EXPECT_NEAR(got[1].data<float>()[step * 4 + i], (step + 2) * xi, 1e-6) << step << " " << i;
  }
}

TEST(OnnxImportTest, LoopWithRunTimeTripCountNeedsFreezing) {
  ModelBuilder m = LoopModel(true);
  std::string msg = ExpectError([&] { Import(m); }, ErrorCode::kNotConstant);
  EXPECT_NE(msg.find("'M'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("loop"), std::string::npos) << msg;
  ImportOptions opts;
  opts.frozen_inputs["M"] = I64({}, {2});
  EXPECT_EQ(CountOps(*Import(m, opts), ir::OpKind::kAdd), 2);
}

TEST(OnnxImportTest, ScatterRejectsConstantOutOfRangeIndicesAndUnknownReductions) {
  auto model = [](const HostTensor& idx, const std::string& reduction) {
    ModelBuilder m(16);
    m.Input("x", onnx::TensorProto::FLOAT, {2, 3});
    m.Input("u", onnx::TensorProto::FLOAT, {2, 2});
    m.Initializer("idx", idx);
    onnx::NodeProto* n = m.Node("ScatterElements", {"x", "idx", "u"}, {"y"}, "scatter");
    AttrInt(n, "axis", 1);
    auto* a = n->add_attribute();
    a->set_name("reduction");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(reduction);
    m.Output("y");
    return m;
  };
  HostTensor ok = I64({2, 2}, {0, -3, 2, 1});
  EXPECT_EQ(CountOps(*Import(model(ok, "add")), ir::OpKind::kScatterElements), 1);
  std::string msg = ExpectError(
      [&] {
        Import(model(I64({2, 2}, {0, 3, 1, 1}), "add"));
      },
      ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("'indices'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("scatter"), std::string::npos) << msg;
  msg = ExpectError([&] { Import(model(ok, "avg")); }, ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("'avg'"), std::string::npos) << msg;
}

// NonMaxSuppression reference (the ONNX reference implementation's greedy order): corner boxes.
std::vector<int64_t> RefNms(const HostTensor& boxes, const HostTensor& scores,
                            int64_t max_per_class, float iou_thr, float score_thr) {
  int64_t nb = boxes.shape[1], nc = scores.shape[1];
  auto iou = [&](const float* p, const float* q) {
    float py0 = std::min(p[0], p[2]), py1 = std::max(p[0], p[2]);
    float px0 = std::min(p[1], p[3]), px1 = std::max(p[1], p[3]);
    float qy0 = std::min(q[0], q[2]), qy1 = std::max(q[0], q[2]);
    float qx0 = std::min(q[1], q[3]), qx1 = std::max(q[1], q[3]);
    float ix = std::min(px1, qx1) - std::max(px0, qx0),
          iy = std::min(py1, qy1) - std::max(py0, qy0);
    if (ix <= 0 || iy <= 0) return 0.0f;
    float inter = ix * iy, uni = (px1 - px0) * (py1 - py0) + (qx1 - qx0) * (qy1 - qy0) - inter;
    return inter / uni;
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < boxes.shape[0]; ++b)
    for (int64_t c = 0; c < nc; ++c) {
      const float* sc = scores.data<float>() + (b * nc + c) * nb;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < nb; ++i)
        if (sc[i] > score_thr) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const float* q = boxes.data<float>() + (b * nb + i) * 4;
        bool keep = true;
        for (int64_t k : kept)
          keep = keep && !(iou(boxes.data<float>() + (b * nb + k) * 4, q) > iou_thr);
        if (!keep) continue;
        kept.push_back(i);
        out.insert(out.end(), {b, c, i});
      }
    }
  return out;
}

// NMS: boxes and scores at run time; the padded result is trimmed to the rows the device found.
ModelBuilder NmsModel(bool consume) {
  ModelBuilder m(11);
  m.Input("boxes", onnx::TensorProto::FLOAT, {2, 40, 4});
  m.Input("scores", onnx::TensorProto::FLOAT, {2, 3, 40});
  m.Initializer("max", I64({1}, {25}));
  HostTensor iou(DType::kFloat32, {1}), score(DType::kFloat32, {1});
  iou.data<float>()[0] = 0.3f;
  score.data<float>()[0] = 0.2f;
  m.Initializer("iou", iou);
  m.Initializer("score", score);
  m.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score"}, {"sel"}, "nms");
  if (consume) {
    m.Node("Cast", {"sel"}, {"y"}, "cast");
    AttrInt(m.model().mutable_graph()->mutable_node(1), "to", onnx::TensorProto::FLOAT);
  }
  m.Output(consume ? "y" : "sel");
  return m;
}

TEST(OnnxImportTest, NonMaxSuppressionTrimsItsOutputToTheSelectedRows) {
  HostTensor boxes = RandomF32({2, 40, 4}, 41, 0.0f, 1.0f);  // many overlapping boxes
  HostTensor scores = RandomF32({2, 3, 40}, 42, 0.0f, 1.0f);
  scores.data<float>()[5] = scores.data<float>()[9];  // a tie: the lower index goes first
  auto got =
      testing::CompileAndRun(Import(NmsModel(false)), {{"boxes", boxes}, {"scores", scores}});
  std::vector<int64_t> want = RefNms(boxes, scores, 25, 0.3f, 0.2f);
  ASSERT_EQ(got[0].dtype, DType::kInt64);
  ASSERT_EQ(got[0].shape, (Shape{static_cast<int64_t>(want.size() / 3), 3}));
  EXPECT_LT(want.size(), 2u * 3 * 25 * 3) << "the test should suppress some boxes";
  EXPECT_GT(want.size(), 2u * 3 * 3) << "the test should select several boxes per class";
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[0].data<int64_t>()[i], want[i]) << i;
}

TEST(OnnxImportTest, NonMaxSuppressionResultCanOnlyBeAGraphOutput) {
  std::string msg = ExpectError([&] { Import(NmsModel(true)); }, ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("data-dependent"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cast"), std::string::npos) << msg;
}

}  // namespace
}  // namespace texel::onnx_frontend
