#include <gtest/gtest.h>

#include "core/error.h"
#include "core/parse.h"

using namespace rtf;

TEST(Parse, DurationUnits) {
    EXPECT_DOUBLE_EQ(parse_duration_ms("120ms", "--cost"), 120.0);
    EXPECT_DOUBLE_EQ(parse_duration_ms("1.5s", "--cost"), 1500.0);
    EXPECT_DOUBLE_EQ(parse_duration_ms("800us", "--cost"), 0.8);
    EXPECT_DOUBLE_EQ(parse_duration_ms("2m", "--duration"), 120000.0);
    EXPECT_DOUBLE_EQ(parse_duration_ms("1.5min", "--duration"), 90000.0);
    EXPECT_DOUBLE_EQ(parse_duration_ms("1h", "--duration"), 3600000.0);
    EXPECT_DOUBLE_EQ(parse_duration_ms(" 250 ", "--cost"), 250.0);
}

TEST(Parse, DurationErrorsNameTheFlagAndValue) {
    for (const char *bad : {"", "ms", "-5ms", "abc", "12xs", "nan"}) {
        try {
            parse_duration_ms(bad, "--cost");
            FAIL() << "accepted '" << bad << "'";
        } catch (const Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::Usage);
            EXPECT_NE(std::string(e.what()).find("--cost"), std::string::npos) << e.what();
            EXPECT_EQ(e.exit_code(), 1);
        }
    }
}

TEST(Parse, IntRange) {
    EXPECT_EQ(parse_int("16", "--d1", 1, 1024), 16);
    EXPECT_THROW(parse_int("0", "--d1", 1, 1024), Error);
    EXPECT_THROW(parse_int("-3", "--d1", 1, 1024), Error);
    EXPECT_THROW(parse_int("4x", "--d1", 1, 1024), Error);
    try {
        parse_int("0", "--d1", 1, 1024);
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("'0'"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("--d1"), std::string::npos);
    }
}

TEST(Parse, KeyValues) {
    auto kv = parse_key_values("llm=120ms, tts = 450ms,t2w=350ms", "--cost");
    ASSERT_EQ(kv.size(), 3u);
    EXPECT_EQ(kv[1].first, "tts");
    EXPECT_EQ(kv[1].second, "450ms");
    EXPECT_THROW(parse_key_values("llm", "--cost"), Error);
    EXPECT_THROW(parse_key_values("llm=", "--cost"), Error);
    EXPECT_THROW(parse_key_values("=3", "--cost"), Error);
}

TEST(Parse, IntList) {
    EXPECT_EQ(parse_int_list("0-3,6,2", "--cpus"), (std::vector<int>{0, 1, 2, 3, 6}));
    EXPECT_THROW(parse_int_list("3-1", "--cpus"), Error);
    EXPECT_THROW(parse_int_list("a", "--cpus"), Error);
}

TEST(Parse, DoubleRejectsJunk) {
    EXPECT_DOUBLE_EQ(parse_double("0.03", "--noise", 0, 1), 0.03);
    EXPECT_THROW(parse_double("0.03x", "--noise", 0, 1), Error);
    EXPECT_THROW(parse_double("inf", "--noise", 0, 1), Error);
    EXPECT_THROW(parse_double("2", "--noise", 0, 1), Error);
}

// An engine names a setting in its own terms; the CLI says it as the flag (error_text).
TEST(Error, ASettingIsNamedByItsKnobAndTheCliAddsTheDashes) {
    try {
        throw_setting("flow-steps", "3 does not match the prompt cache");
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        EXPECT_EQ(e.exit_code(), 1);
        EXPECT_EQ(e.setting(), "flow-steps");
        EXPECT_STREQ(e.what(), "flow-steps: 3 does not match the prompt cache");
        EXPECT_EQ(error_text(e), "--flow-steps: 3 does not match the prompt cache");
    }
    try {
        throw_usage("plain message");
    } catch (const Error &e) {
        EXPECT_EQ(e.setting(), "");
        EXPECT_EQ(error_text(e), "plain message");
    }
}
