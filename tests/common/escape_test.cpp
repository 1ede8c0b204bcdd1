// common/escape.h: what a message quoting untrusted text may hold. Its output goes into JSON that
// clients parse strictly (Triton's repository index, its error bodies), so it must be valid UTF-8
// whatever the input, and carry no control character.
#include "common/escape.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace torch_tensorrt::executorch_backend {
namespace {

// Valid UTF-8 by the same table, checked here byte by byte without the header's helper.
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0x100; };
    const unsigned c = b(i);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) n = 1;
    else if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) n = 3;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else return false;
    for (std::size_t k = 1; k < n; ++k) {
      const unsigned t = b(i + k);
      if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n;
  }
  return true;
}

bool has_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80) {
      return true;
    }
  }
  return false;
}

TEST(Escape, PrintableTextAndWellFormedUtf8PassAsTheyAre) {
  EXPECT_EQ(escape_for_message("input_0 [8, 64]"), "input_0 [8, 64]");
  EXPECT_EQ(escape_for_message("k\xC3\xA9\xF0\x9F\x98\x80 \xE4\xB8\xAD \xF4\x8F\xBF\xBF"),
            "k\xC3\xA9\xF0\x9F\x98\x80 \xE4\xB8\xAD \xF4\x8F\xBF\xBF");
}

TEST(Escape, ControlsAndBackslashesAreEscaped) {
  EXPECT_EQ(escape_for_message("a\nb\x1b[2J\x7f\\"), "a\\x0ab\\x1b[2J\\x7f\\x5c");
  EXPECT_EQ(escape_for_message("c1 \xC2\x9B x"), "c1 \\xc2\\x9b x");  // U+009B, a CSI
  EXPECT_EQ(escape_for_message("nbsp \xC2\xA0"), "nbsp \xC2\xA0");     // U+00A0 is no control
}

TEST(Escape, BytesThatAreNotWellFormedUtf8AreEscaped) {
  EXPECT_EQ(escape_for_message("a\xAC" "b"), "a\\xacb");                  // a lone continuation byte
  EXPECT_EQ(escape_for_message("\xFF\xFE"), "\\xff\\xfe");                // never in UTF-8
  EXPECT_EQ(escape_for_message("\xC0\xAF"), "\\xc0\\xaf");                // an overlong '/'
  EXPECT_EQ(escape_for_message("\xE0\x80\xAF"), "\\xe0\\x80\\xaf");       // another
  EXPECT_EQ(escape_for_message("\xED\xA0\x80"), "\\xed\\xa0\\x80");       // a surrogate
  EXPECT_EQ(escape_for_message("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_for_message("\xE4\xB8"), "\\xe4\\xb8");                // cut short at the end
  EXPECT_EQ(escape_for_message("\xE4\xB8x"), "\\xe4\\xb8x");              // cut short before a letter
  EXPECT_EQ(escape_for_message("\xC2" "A"), "\\xc2A");
}

TEST(Escape, Utf8IsCheckedWhole) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("forward k\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("forw\xACrd"));
  EXPECT_FALSE(is_valid_utf8("end \xE4\xB8"));      // cut short
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_TRUE(is_valid_utf8(std::string("a\0b", 3)));  // NUL is UTF-8 (escaped when quoted, as a control)
}

TEST(Escape, TheLimitNeverCutsACharacter) {
  EXPECT_EQ(escape_for_message("abcdef", 4), "abcd...");
  EXPECT_EQ(escape_for_message("abc\xE4\xB8\xAD", 4), "abc...");  // the character would pass the limit
  EXPECT_EQ(escape_for_message("abc\xE4\xB8\xAD", 6), "abc\xE4\xB8\xAD");
  EXPECT_EQ(escape_for_message("abc\xE4\xB8\xAD", 5), "abc...");
  EXPECT_EQ(escape_for_message("abc\xAC" "d", 4), "abc\\xac...");
  EXPECT_EQ(escape_for_message("", 0), "");
  EXPECT_EQ(escape_for_message("x", 0), "...");
}

TEST(Escape, AnyBytesGiveValidUtf8WithoutControlsWithinTheLimit) {
  std::mt19937 rng(46);
  for (int round = 0; round < 20000; ++round) {
    std::string text(rng() % 40, '\0');
    for (char& c : text) {
      // Mostly the bytes around UTF-8's edges, so that sequences, broken ones included, are common.
      const unsigned pick = rng() % 4;
      c = static_cast<char>(pick == 0 ? rng() % 256 : pick == 1 ? 0x80 + rng() % 64 : pick == 2 ? 0xC0 + rng() % 64 : 0x20 + rng() % 95);
    }
    ASSERT_EQ(is_valid_utf8(text), valid_utf8(text)) << round;
    const std::size_t limit = rng() % 48;
    const std::string out = escape_for_message(text, limit);
    ASSERT_TRUE(valid_utf8(out)) << round;
    ASSERT_FALSE(has_control(out)) << round;
    // Read back (a backslash is always escaped, so every "\\x" is one), it is the text, or a prefix of
    // it within the limit and no more than one character (4 bytes) short of it, then "...".
    const bool cut = text.size() > limit;
    ASSERT_TRUE(!cut || (out.size() >= 3 && out.compare(out.size() - 3, 3, "...") == 0)) << round;
    const std::string body = cut ? out.substr(0, out.size() - 3) : out;
    std::string back;
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\\') {
        ASSERT_TRUE(i + 3 < body.size() && body[i + 1] == 'x') << round;
        back += static_cast<char>(std::stoi(body.substr(i + 2, 2), nullptr, 16));
        i += 3;
      } else {
        back += body[i];
      }
    }
    if (cut) {
      ASSERT_LE(back.size(), limit) << round;
      ASSERT_GE(back.size() + 3, limit) << round;
      ASSERT_EQ(back, text.substr(0, back.size())) << round;
    } else {
      ASSERT_EQ(back, text) << round;
    }
  }
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
