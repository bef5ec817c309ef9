#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/sha256.h"

namespace texel {
namespace {

TEST(Sha256Test, EmptyString) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, Abc) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, TwoBlockMessage) {
  // 448 bits: the padding needs a second block.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, MillionAs) {
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, BlockBoundaries) {
  // Lengths around the 55/56/64-byte padding edges must all differ and be stable.
  std::string prev;
  for (size_t n : {55u, 56u, 63u, 64u, 65u}) {
    std::string digest = Sha256Hex(std::string(n, 'x'));
    EXPECT_EQ(digest.size(), 64u);
    EXPECT_NE(digest, prev);
    EXPECT_EQ(digest, Sha256Hex(std::string(n, 'x')));
    prev = digest;
  }
  EXPECT_EQ(Sha256Hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256Test, ExtensionsAgreeWithThePortableCode) {
  // Random bytes of every length around the block and padding edges, and a long run.
  std::mt19937 rng(std::random_device{}());
  std::string data(1 << 20, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n = 0; n < 300; ++n)
    ASSERT_EQ(Sha256Hex(std::string_view(data).substr(0, n)),
              Sha256HexPortable(std::string_view(data).substr(0, n)))
        << n << " bytes";
  EXPECT_EQ(Sha256Hex(data), Sha256HexPortable(data));
  EXPECT_EQ(Sha256HexPortable(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace texel
