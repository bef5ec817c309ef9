// The linalg frontend on bad input: every error is a texel::Error that points at
// "<source>:<line>:<col>" and names what is wrong; garbage never crashes it. Also the sniffing
// that routes text to this frontend. No device is needed.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "core/error.h"
#include "frontend/linalg/importer.h"

namespace texel::linalg_frontend {
namespace {

// A valid two-input fragment; the tests below replace parts of it.
const char* kGood =
    R"(func.func @f(%arg0: memref<4x8xf32>, %arg1: memref<8x6xf32>, %arg2: memref<4x6xf32>) {
  %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32>
  %1 = bufferization.to_tensor %arg1 restrict : memref<8x6xf32>
  %2 = tensor.empty() : tensor<4x6xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %4 = linalg.matmul ins(%0, %1 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%3 : tensor<4x6xf32>) -> tensor<4x6xf32>
  bufferization.materialize_in_destination %4 in restrict writable %arg2 : (tensor<4x6xf32>, memref<4x6xf32>) -> ()
  return
}
)";

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size()))
    s.replace(i, from.size(), to);
  return s;
}

// kGood with the first occurrence of `from` replaced by `to`.
std::string Edit(const std::string& from, const std::string& to) {
  std::string s = kGood;
  size_t i = s.find(from);
  EXPECT_NE(i, std::string::npos) << from;
  if (i != std::string::npos) s.replace(i, from.size(), to);
  return s;
}

// Imports text as "bad.mlir" and expects an Error of `code` whose what() starts with
// "bad.mlir:<pos>: " and contains `part`.
void ExpectError(const std::string& text, ErrorCode code, const std::string& pos,
                 const std::string& part) {
  try {
    ImportLinalgText(text, "bad.mlir");
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), code) << what;
    EXPECT_EQ(what.rfind("bad.mlir:" + pos + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
    return;
  }
  ADD_FAILURE() << "imported without error; expected: " << part;
}

TEST(LinalgErrors, GoodFragmentImports) {
  auto g = ImportLinalgText(kGood, "good.mlir");
  EXPECT_EQ(g->inputs().size(), 2u);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name, "arg2");
  // One unparenthesized result type: the '{' after it opens the body.
  auto r = ImportLinalgText(
      "func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n",
      "one.mlir");
  ASSERT_EQ(r->outputs().size(), 1u);
  EXPECT_EQ(r->outputs()[0]->name, "result0");
}

TEST(LinalgErrors, ParseErrorsHaveLineAndColumn) {
  // A stray character (line 3, column 3).
  ExpectError(Edit("  %1 = bufferization", "  $1 = bufferization"), ErrorCode::kInvalidModel, "3:3",
              "unexpected character '$'");
  // A missing ')' after the ins types (line 7, column 68: where 'outs' starts).
  ExpectError(Edit("tensor<8x6xf32>) outs", "tensor<8x6xf32> outs"), ErrorCode::kInvalidModel,
              "7:68", "expected ')'");
  // Text that ends inside the body: the unclosed '{' of the function (line 1, column 86).
  std::string cut = kGood;
  cut.resize(cut.find("  return"));
  ExpectError(cut, ErrorCode::kInvalidModel, "1:86", "'{' is not closed");
  ExpectError("", ErrorCode::kInvalidModel, "1:1", "no function to import");
  ExpectError("module {\n  %x = 1\n}", ErrorCode::kInvalidModel, "2:3", "expected 'func.func'");
  ExpectError("#m = affine_map<(d0) -> (d0 + 1)>\n" + std::string(kGood), ErrorCode::kUnsupported,
              "1:26", "affine map result 'd0 + 1' is not supported");
}

TEST(LinalgErrors, UnsupportedOpsAreNamed) {
  ExpectError(Edit("%4 = linalg.matmul", "%4 = linalg.conv_2d_nhwc_hwcf"), ErrorCode::kUnsupported,
              "7:8", "'linalg.conv_2d_nhwc_hwcf' is not supported");
  ExpectError(Edit("  return", "  scf.yield\n  return"), ErrorCode::kUnsupported, "9:3",
              "'scf.yield' is not supported");
  ExpectError(Edit("%2 = tensor.empty() : tensor<4x6xf32>",
                   "%2 = tensor.empty() : tensor<4x6xf32>\n  %9 = arith.addf %cst, %cst : f32"),
              ErrorCode::kUnsupported, "5:8", "outside a linalg.generic body");
  ExpectError(
      Edit("%2 = tensor.empty() : tensor<4x6xf32>", "%2 = tensor.empty() : tensor<4x6xbf16>"),
      ErrorCode::kUnsupported, "4:25", "element type 'bf16' is not supported");
}

TEST(LinalgErrors, TypeMismatchesPointAtTheOp) {
  // An operand's annotated type differs from its definition (the use of %0, line 7 column 26).
  ExpectError(Edit("ins(%0, %1 : tensor<4x8xf32>", "ins(%0, %1 : tensor<4x9xf32>"),
              ErrorCode::kInvalidModel, "7:26",
              "has type tensor<4x8xf32>, but the op states tensor<4x9xf32>");
  // A matmul whose outs shape does not fit (line 7 column 8: the op name).
  std::string text = Edit("%4 = linalg.matmul ins(%0, %1 : tensor<4x8xf32>, tensor<8x6xf32>)",
                          "%4 = linalg.matmul ins(%1, %0 : tensor<8x6xf32>, tensor<4x8xf32>)");
  ExpectError(text, ErrorCode::kInvalidModel, "7:8", "shape mismatch");
  // The stated result type differs from the outs type.
  ExpectError(Edit("tensor<4x6xf32>) -> tensor<4x6xf32>\n  bufferization",
                   "tensor<4x6xf32>) -> tensor<4x7xf32>\n  bufferization"),
              ErrorCode::kInvalidModel, "7:8", "returns tensor<4x7xf32>, but its outs operand");
  // Writing a tensor into a memref of another shape.
  ExpectError(ReplaceAll(kGood, "memref<4x6xf32>", "memref<4x5xf32>"), ErrorCode::kInvalidModel,
              "8:3", "cannot write tensor<4x6xf32> into memref<4x5xf32>");
  // A fill value of another element type.
  ExpectError(Edit("ins(%cst : f32)", "ins(%cst : f16)"), ErrorCode::kInvalidModel, "6:24",
              "fill value has type f16");
}

TEST(LinalgErrors, NamesAreChecked) {
  ExpectError(Edit("ins(%0, %1 :", "ins(%0, %7 :"), ErrorCode::kInvalidModel, "7:30",
              "use of undefined value %7");
  ExpectError(Edit("%3 = linalg.fill", "%2 = linalg.fill"), ErrorCode::kInvalidModel, "6:3",
              "redefinition of %2 (first defined at 4:3)");
  std::string generic = R"(func.func @f(%a: memref<4xf32>, %o: memref<4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4xf32>
  %1 = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
})";
  ExpectError(generic, ErrorCode::kInvalidModel, "3:41", "unknown attribute alias '#m'");
}

TEST(LinalgErrors, ArgumentsAreChecked) {
  ExpectError(Edit("%arg0: memref<4x8xf32>", "%arg0: memref<?x8xf32>"), ErrorCode::kUnsupported,
              "1:14", "argument %arg0 has a dynamic dim (memref<?x8xf32>)");
  // arg0 read, then written: in-place updates are rejected at the write.
  ExpectError(Edit("writable %arg2 : (tensor<4x6xf32>, memref<4x6xf32>)",
                   "writable %arg0 : (tensor<4x6xf32>, memref<4x8xf32>)"),
              ErrorCode::kUnsupported, "8:3",
              "argument %arg0 is both read (bufferization.to_tensor at 2:8) and written");
  // No output.
  std::string none = kGood;
  size_t b = none.find("  bufferization.materialize");
  none.erase(b, none.find("  return") - b);
  ExpectError(none, ErrorCode::kInvalidModel, "1:1", "@f writes no output");
  // A scalar argument.
  ExpectError(Edit("%arg1: memref<8x6xf32>", "%arg1: f32"), ErrorCode::kUnsupported, "1:38",
              "argument %arg1 has the scalar type f32");
}

TEST(LinalgErrors, SemanticsOutsideTheSubsetAreRejected) {
  // Reading tensor.empty's undefined contents, as an operand or through a generic's %out.
  const char* empty = R"(func.func @f(%o: memref<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %1 = linalg.exp ins(%e : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
})";
  ExpectError(empty, ErrorCode::kInvalidModel, "3:23", "comes from tensor.empty");
  const char* empty_out = R"(#m = affine_map<(d0) -> (d0)>
func.func @f(%a: memref<4xf32>, %o: memref<4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
})";
  ExpectError(empty_out, ErrorCode::kInvalidModel, "7:26", "undefined contents");
  const char* reduction = R"(#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @f(%a: memref<4x8xf32>, %o: memref<4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4x8xf32>
  %e = tensor.empty() : tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
})";
  ExpectError(reduction, ErrorCode::kUnsupported, "6:81",
              "iterator type 'reduction' is not supported");
  const char* out_map = R"(#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @f(%a: memref<4x4xf32>, %o: memref<4x4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #t], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4x4xf32>, memref<4x4xf32>) -> ()
  return
})";
  ExpectError(out_map, ErrorCode::kUnsupported, "6:46",
              "the output's indexing map must be the identity");
}

TEST(LinalgErrors, OptionsAreChecked) {
  onnx_frontend::ImportOptions opts;
  opts.input_shapes["arg0"] = {5, 8};
  try {
    ImportLinalgText(kGood, "opts.mlir", opts);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(
                  "--input-shape arg0=5x8: argument %arg0 has the static shape 4x8"),
              std::string::npos)
        << e.what();
  }
  opts.input_shapes = {{"nosuch", {1}}};
  try {
    ImportLinalgText(kGood, "opts.mlir", opts);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nosuch', which is not an input"), std::string::npos)
        << e.what();
  }
}

TEST(LinalgErrors, MissingFileIsNotFound) {
  try {
    ImportLinalgFile("/nonexistent/dir/model.mlir");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(e.what()), "/nonexistent/dir/model.mlir: file not found");
  }
  // The compiler's dispatch on the extension reports it the same way.
  try {
    ImportModelFile("/nonexistent/dir/model.mlir", {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST(LinalgErrors, SniffsTextFromOnnx) {
  EXPECT_TRUE(LooksLikeLinalg(kGood));
  EXPECT_TRUE(LooksLikeLinalg("  // comment\n\nmodule {\n}"));
  EXPECT_TRUE(LooksLikeLinalg("#map = affine_map<(d0) -> (d0)>"));
  EXPECT_TRUE(
      LooksLikeLinalg("\xEF\xBB\xBF"
                      "func.func @f() {"));
  EXPECT_FALSE(LooksLikeLinalg("modules"));
  EXPECT_FALSE(LooksLikeLinalg("This is a text file"));
  EXPECT_FALSE(LooksLikeLinalg(std::string("\x08\x07\x12\x04", 4)));  // an ONNX ir_version tag
  EXPECT_FALSE(LooksLikeLinalg(""));
  // Bytes: text goes to this frontend (errors name "<memory>"), anything else to ONNX.
  try {
    ImportModelBytes("func.func @f() {\n  return\n}\n", ".", {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("<memory>:1:1: @f writes no output", 0), 0u) << e.what();
  }
  try {
    ImportModelBytes("garbage", ".", {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an ONNX model"), std::string::npos) << e.what();
  }
}

// Found in review: each of these was accepted, crashed or was misreported before.
TEST(LinalgErrors, ReviewedCorners) {
  // Ops with a syntax of their own are named, not parsed.
  ExpectError(Edit("%4 = linalg.matmul", "%4 = linalg.reduce"), ErrorCode::kUnsupported, "7:8",
              "'linalg.reduce' is not supported");
  // Element counts that overflow int64 while multiplying.
  ExpectError(Edit("%2 = tensor.empty() : tensor<4x6xf32>",
                   "%2 = tensor.empty() : tensor<4294967296x2147483648xf32>"),
              ErrorCode::kUnsupported, "4:25", "more than 2^32 elements");
  // Aliases of aliases grow geometrically: capped.
  std::string aliases = "#a0 = [0, 0, 0, 0, 0, 0, 0, 0]\n";
  for (int i = 1; i < 12; ++i) {
    std::string prev = "#a" + std::to_string(i - 1);
    aliases += "#a" + std::to_string(i) + " = [" + prev + ", " + prev + ", " + prev + ", " + prev +
               ", " + prev + ", " + prev + ", " + prev + ", " + prev + "]\n";
  }
  try {
    ImportLinalgText(aliases + kGood, "bad.mlir");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aliases expand to more than"), std::string::npos)
        << e.what();
  }
  // A byte-order mark is skipped, as the sniffer skips it.
  EXPECT_NO_THROW(ImportLinalgText("\xEF\xBB\xBF" + std::string(kGood), "bom.mlir"));
  // MLIR's i1 is a signed 1-bit integer; texel's bool is not, so i1 arithmetic is refused.
  ExpectError(R"(func.func @f(%a: memref<4xi1>, %o: memref<4xi1>) {
  %0 = bufferization.to_tensor %a : memref<4xi1>
  %e = tensor.empty() : tensor<4xi1>
  %1 = linalg.add ins(%0, %0 : tensor<4xi1>, tensor<4xi1>) outs(%e : tensor<4xi1>) -> tensor<4xi1>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xi1>, memref<4xi1>) -> ()
  return
})",
              ErrorCode::kUnsupported, "4:8", "'linalg.add' on i1 is not supported");
  // A returned result may not take an input's name.
  ExpectError(R"(func.func @f(%result0: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %1 = linalg.exp ins(%result0 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
})",
              ErrorCode::kUnsupported, "1:1", "has the name of an input");
}

// Every prefix of valid fragments, and random byte edits of them, import or throw texel::Error.
TEST(LinalgErrors, GarbageNeverCrashes) {
  std::vector<std::string> texts = {kGood};
  for (const char* name : {"matmul_add.mlir", "generic_softmaxish.mlir"}) {
    std::ifstream f(std::string(TEXEL_TEST_DATA_DIR) + "/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    texts.push_back(ss.str());
  }
  auto attempt = [](const std::string& text) {
    try {
      ImportLinalgText(text, "fuzz.mlir");
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz.mlir:", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a texel::Error: " << e.what() << "\n" << text;
    }
  };
  std::mt19937 rng(11);
  const std::string alphabet = "%@#^!(){}[]<>,:=?*+-x0123456789.fe\"\n /";
  for (const std::string& text : texts) {
    for (size_t n = 0; n <= text.size(); ++n) attempt(text.substr(0, n));
    for (int i = 0; i < 1500; ++i) {
      std::string t = text;
      size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: t.erase(at, 1 + rng() % 8); break;
        default: t[at] = static_cast<char>(rng() % 256); break;
      }
      attempt(t);
    }
  }
  attempt(std::string(100000, '['));
  attempt("#m = " + std::string(100000, '['));
  attempt("func.func @f() {\n  %0 = arith.constant dense<" + std::string(5000, '[') + "1" +
          std::string(5000, ']') + "> : tensor<1xf32>\n  return\n}");
  attempt("func.func @f(%a: memref<99999999999999999999xf32>) {\n  return\n}");
  attempt("func.func @f(%a: memref<65536x65536x2xf32>) {\n  return\n}");
}

}  // namespace
}  // namespace texel::linalg_frontend
