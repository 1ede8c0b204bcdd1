// EXPECT_CONTAINS(text, part): a substring check for error messages, without gmock.
#pragma once

#include <gtest/gtest.h>

#include <string>

#define EXPECT_CONTAINS(text, part)                                                        \
  do {                                                                                     \
    const std::string trtet_text_ = (text);                                                \
    EXPECT_NE(trtet_text_.find(part), std::string::npos)                                   \
        << "expected \"" << (part) << "\" in: " << trtet_text_;                            \
  } while (0)
