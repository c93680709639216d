// SPDX-License-Identifier: GPL-3.0-or-later
// The Generate view (docs/GUI.md "Generate"): one prompt, the open model (the reference, usually
// full precision) and chosen quantized runs side by side, their text streaming in as it is
// generated. When all are done, each quantized model's tokens are shaded by the KL between the
// reference's and its own next-token distributions at that token (engine/api/generate_api.h),
// the first token where its output parts from the reference's is framed, and hovering a token
// shows the most likely alternatives with their probabilities. The teaching view of what
// quantization does to an answer. Generation runs on its own worker (JobRunner); the GUI thread
// never waits for it.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

#include "engine/api/generate_api.h"
#include "ui/run_checklist.h"

class QCheckBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;
class QHBoxLayout;

namespace ql {

class JobRunner;

class GenerateView : public QWidget {
    Q_OBJECT
public:
    explicit GenerateView(QWidget* parent = nullptr);
    ~GenerateView() override;

    // The open model: the reference. `generates` false (an encoder, the MLP ...) disables the view
    // with the reason; `hasChatTemplate` ticks "Chat template".
    void setReferenceModel(const QString& path, bool generates, bool hasChatTemplate);
    // Quantized models to compare (label shown, path of the checkpoint); kept checked by path.
    using Candidate = RunCandidate;
    void setCandidates(const QList<Candidate>& candidates);
    bool checkCandidate(const QString& path, bool checked = true);

    void setPrompt(const QString& prompt);
    void setMaxTokens(int tokens);
    void setChat(bool chat);
    // Starts generation (false when busy or nothing to run); finished() follows.
    bool generate();
    bool isRunning() const;
    bool waitForFinished(int timeoutMs);  // tests, screenshots

    const GenerateReport& report() const { return m_report; }
    // What column `i` shows (HTML of its tokens), and the tool tip of its token `t`.
    QString columnHtml(int column) const;
    QString tokenToolTipAt(int column, int token) const;
    QString statusText() const;

signals:
    void statusMessage(const QString& text, int timeoutMs);
    void finished();

private:
    struct Column;
    void rebuildColumns(const QStringList& titles);
    void renderColumns();
    void onStreamed(size_t output, const GeneratedTokenInfo& token);
    void updateButtons();

    QLabel* m_reference = nullptr;
    QPlainTextEdit* m_prompt = nullptr;
    QCheckBox* m_chat = nullptr;
    QSpinBox* m_maxTokens = nullptr;
    QPushButton* m_generate = nullptr;
    QPushButton* m_stop = nullptr;
    QListWidget* m_models = nullptr;
    QHBoxLayout* m_columnsLayout = nullptr;
    QLabel* m_status = nullptr;
    JobRunner* m_runner = nullptr;
    std::vector<std::unique_ptr<Column>> m_columns;
    QString m_referencePath;
    bool m_generates = false;
    QStringList m_runModels;       // the models of the running / last generation, in column order
    GenerateReport m_report;
    std::vector<std::vector<GeneratedTokenInfo>> m_streamed;
};

}  // namespace ql
