// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generate_view.h"

#include <QCheckBox>
#include <QCursor>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMetaObject>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QToolTip>
#include <QUrl>
#include <QVBoxLayout>

#include "ui/job_runner.h"
#include "ui/token_shading.h"
#include "ui/wrapping_label.h"

namespace ql {

struct GenerateView::Column {
    QFrame* frame = nullptr;
    QLabel* title = nullptr;
    QLabel* stats = nullptr;
    QTextBrowser* text = nullptr;
    QString html;
};

namespace {

QString shortName(const QString& path) {
    const QFileInfo info(path);
    return info.fileName().isEmpty() ? path : info.fileName();
}

}  // namespace

GenerateView::GenerateView(QWidget* parent) : QWidget(parent), m_runner(new JobRunner(this)) {
    auto* layout = new QVBoxLayout(this);
    auto* intro = new WrappingLabel(this);
    intro->setText(tr("Generate text with the open model and quantized runs of it, side by side. Each quantized model's "
                      "tokens are shaded by KL(FP ‖ quantized) of the next-token distributions at that token; the first token "
                      "where its answer parts from the reference's is underlined; hover a token for the most likely "
                      "alternatives."));
    layout->addWidget(intro);
    m_reference = new QLabel(tr("No model open."), this);
    m_reference->setObjectName(QStringLiteral("generateReference"));
    layout->addWidget(m_reference);

    auto* top = new QSplitter(Qt::Horizontal, this);
    auto* promptBox = new QWidget(top);
    auto* promptLayout = new QVBoxLayout(promptBox);
    promptLayout->setContentsMargins(0, 0, 0, 0);
    m_prompt = new QPlainTextEdit(promptBox);
    m_prompt->setObjectName(QStringLiteral("generatePrompt"));
    m_prompt->setPlaceholderText(tr("Prompt, e.g. Answer with JSON only: an object with keys name and age for Alice, 30"));
    m_prompt->setMaximumHeight(90);
    promptLayout->addWidget(m_prompt);
    auto* options = new QHBoxLayout;
    m_chat = new QCheckBox(tr("Chat template"), promptBox);
    m_chat->setToolTip(tr("Render the prompt as a user turn through the model's own chat template"));
    options->addWidget(m_chat);
    options->addWidget(new QLabel(tr("Max tokens"), promptBox));
    m_maxTokens = new QSpinBox(promptBox);
    m_maxTokens->setRange(1, 2048);
    m_maxTokens->setValue(64);
    options->addWidget(m_maxTokens);
    options->addStretch(1);
    m_generate = new QPushButton(tr("Generate"), promptBox);
    m_generate->setObjectName(QStringLiteral("generateButton"));
    m_generate->setDefault(true);
    m_stop = new QPushButton(tr("Stop"), promptBox);
    options->addWidget(m_generate);
    options->addWidget(m_stop);
    promptLayout->addLayout(options);
    top->addWidget(promptBox);
    m_models = new QListWidget(top);
    m_models->setObjectName(QStringLiteral("generateModels"));
    m_models->setToolTip(tr("Quantized runs of the project to generate with beside the open model"));
    m_models->setMaximumHeight(130);
    top->addWidget(m_models);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    layout->addWidget(top);

    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    auto* columns = new QWidget(scroll);
    m_columnsLayout = new QHBoxLayout(columns);
    m_columnsLayout->setContentsMargins(0, 0, 0, 0);
    scroll->setWidget(columns);
    layout->addWidget(scroll, 1);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("generateStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);

    connect(m_generate, &QPushButton::clicked, this, [this] { generate(); });
    connect(m_stop, &QPushButton::clicked, m_runner, &JobRunner::cancel);
    connect(m_runner, &JobRunner::finished, this, [this](JobRunner::Outcome outcome, const QString& message) {
        if (outcome == JobRunner::Outcome::Failed) m_status->setText(tr("Generation failed: %1").arg(message));
        else if (outcome == JobRunner::Outcome::Cancelled) m_status->setText(tr("Generation stopped."));
        updateButtons();
        emit finished();
    });
    connect(m_runner, &JobRunner::progressChanged, this, [this] {
        const ProgressEstimate& p = m_runner->progress();
        if (m_runner->isRunning() && p.total() > 0)
            m_status->setText(tr("Generating… %1 of %2 outputs done").arg(p.done()).arg(p.total()));
    });
    updateButtons();
}

GenerateView::~GenerateView() = default;

void GenerateView::setReferenceModel(const QString& path, bool generates, bool hasChatTemplate) {
    m_referencePath = path;
    m_generates = generates;
    m_chat->setEnabled(hasChatTemplate);
    m_chat->setChecked(hasChatTemplate);
    m_reference->setText(generates ? tr("Reference: %1").arg(path)
                                   : tr("%1 does not generate text (an encoder, a classifier or no tokenizer).").arg(path));
    updateButtons();
}

void GenerateView::setCandidates(const QList<Candidate>& candidates) {
    fillRunChecklist(m_models, candidates, tr("(no quantized runs yet: run PTQ, QAT or QAD to compare)"));
}

bool GenerateView::checkCandidate(const QString& path, bool checked) { return checkRun(m_models, path, checked); }

void GenerateView::setPrompt(const QString& prompt) { m_prompt->setPlainText(prompt); }
void GenerateView::setMaxTokens(int tokens) { m_maxTokens->setValue(tokens); }
void GenerateView::setChat(bool chat) { m_chat->setChecked(chat && m_chat->isEnabled()); }
bool GenerateView::isRunning() const { return m_runner->isRunning(); }
bool GenerateView::waitForFinished(int timeoutMs) { return m_runner->waitForFinished(timeoutMs); }
QString GenerateView::statusText() const { return m_status->text(); }

void GenerateView::updateButtons() {
    const bool running = m_runner->isRunning();
    m_generate->setEnabled(!running && m_generates && !m_referencePath.isEmpty());
    m_stop->setEnabled(running);
}

void GenerateView::rebuildColumns(const QStringList& titles) {
    for (auto& c : m_columns) delete c->frame;
    m_columns.clear();
    for (int i = 0; i < titles.size(); ++i) {
        auto c = std::make_unique<Column>();
        c->frame = new QFrame(m_columnsLayout->parentWidget());
        c->frame->setFrameShape(QFrame::StyledPanel);
        auto* v = new QVBoxLayout(c->frame);
        c->title = new QLabel(QStringLiteral("<b>%1</b>").arg(titles[i].toHtmlEscaped()), c->frame);
        c->title->setToolTip(m_runModels.value(i));
        c->stats = new QLabel(c->frame);
        c->stats->setWordWrap(true);
        c->text = new QTextBrowser(c->frame);
        c->text->setObjectName(QStringLiteral("generateOutput%1").arg(i));
        c->text->setOpenLinks(false);
        // Narrow enough that the reference and four runs fit side by side in a 1600-pixel window;
        // more runs scroll.
        c->text->setMinimumWidth(215);
        QTextBrowser* browser = c->text;
        const int column = i;
        connect(browser, &QTextBrowser::highlighted, this, [this, browser, column](const QUrl& url) {
            const QString s = url.toString();
            if (!s.startsWith(QStringLiteral("token:"))) {
                QToolTip::hideText();
                return;
            }
            QToolTip::showText(QCursor::pos(), tokenToolTipAt(column, s.mid(6).toInt()), browser);
        });
        v->addWidget(c->title);
        v->addWidget(c->stats);
        v->addWidget(c->text, 1);
        m_columnsLayout->addWidget(c->frame, 1);
        m_columns.push_back(std::move(c));
    }
}

bool GenerateView::generate() {
    if (m_runner->isRunning() || !m_generates || m_referencePath.isEmpty()) return false;
    const QString prompt = m_prompt->toPlainText();
    if (prompt.trimmed().isEmpty()) {
        m_status->setText(tr("Write a prompt first."));
        return false;
    }
    GenerateRequest req;
    m_runModels = {m_referencePath};
    QStringList titles = {tr("%1 (reference)").arg(shortName(m_referencePath))};
    for (int i = 0; i < m_models->count(); ++i)
        if (m_models->item(i)->checkState() == Qt::Checked) {
            m_runModels << m_models->item(i)->data(Qt::UserRole).toString();
            titles << m_models->item(i)->text();
        }
    for (const QString& m : m_runModels) req.models.push_back(m.toStdString());
    req.prompts.push_back({prompt.toStdString(), ""});
    req.chat = m_chat->isChecked();
    req.max_new_tokens = m_maxTokens->value();
    m_report = {};
    m_streamed.assign(static_cast<size_t>(m_runModels.size()), {});
    rebuildColumns(titles);
    m_status->setText(tr("Generating with %n model(s)…", nullptr, static_cast<int>(m_runModels.size())));
    auto result = std::make_shared<GenerateReport>();
    QPointer<GenerateView> self(this);
    const bool started = m_runner->start(
        tr("Generate"),
        [req, result, self](JobSink& sink, const CancellationToken& cancel) {
            *result = run_generate(req, sink, cancel, [self](size_t output, const GeneratedTokenInfo& token) {
                QMetaObject::invokeMethod(
                    self.data(), [self, output, token] {
                        if (self) self->onStreamed(output, token);
                    },
                    Qt::QueuedConnection);
            });
        },
        std::nullopt, {}, [this, result] {
            m_report = *result;
            renderColumns();
        });
    updateButtons();
    return started;
}

void GenerateView::onStreamed(size_t output, const GeneratedTokenInfo& token) {
    if (output >= m_streamed.size() || output >= m_columns.size()) return;
    m_streamed[output].push_back(token);
    Column& c = *m_columns[output];
    c.html = generatedTokensHtml(m_streamed[output], false, -1, palette().color(QPalette::Highlight), palette().color(QPalette::Text));
    c.text->setHtml(c.html);
    c.stats->setText(tr("%n token(s)…", nullptr, static_cast<int>(m_streamed[output].size())));
}

void GenerateView::renderColumns() {
    const QColor accent(214, 39, 40);  // the KL tint: red, readable in both themes
    for (const GenerateOutput& o : m_report.outputs) {
        if (o.model_index >= m_columns.size()) continue;
        Column& c = *m_columns[o.model_index];
        const bool reference = o.model_index == 0;
        c.html = generatedTokensHtml(o.tokens, !reference, o.first_divergence, accent, palette().color(QPalette::Text));
        c.text->setHtml(c.html);
        QString stats = tr("%1 tokens · first token after %2 s · %3 tokens/s · stop: %4")
                            .arg(o.tokens.size())
                            .arg(o.time_to_first_token_s, 0, 'f', 2)
                            .arg(o.decode_tokens_per_second, 0, 'f', 1)
                            .arg(QString::fromStdString(o.stop_reason));
        if (!reference)
            stats += o.first_divergence < 0 ? tr("<br>same tokens as the reference · mean KL %1 nats").arg(o.mean_kl, 0, 'g', 3)
                                            : tr("<br><b>parts from the reference at token %1</b> · mean KL %2 nats")
                                                  .arg(o.first_divergence)
                                                  .arg(o.mean_kl, 0, 'g', 3);
        c.stats->setText(stats);
    }
    int parted = 0;
    for (const GenerateOutput& o : m_report.outputs) parted += o.model_index > 0 && o.first_divergence >= 0;
    m_status->setText(m_report.outputs.size() <= 1
                          ? tr("Done. Tick quantized runs above to compare them with the reference.")
                          : tr("Done: %1 of %2 quantized model(s) answer differently. Shade: KL 0.001 (faint) to 1 nat (full); hover a "
                               "token for its alternatives.")
                                .arg(parted)
                                .arg(m_report.outputs.size() - 1));
}

QString GenerateView::columnHtml(int column) const {
    return column >= 0 && column < static_cast<int>(m_columns.size()) ? m_columns[static_cast<size_t>(column)]->html : QString();
}

QString GenerateView::tokenToolTipAt(int column, int token) const {
    for (const GenerateOutput& o : m_report.outputs)
        if (static_cast<int>(o.model_index) == column && token >= 0 && token < static_cast<int>(o.tokens.size()))
            return tokenToolTip(o.tokens[static_cast<size_t>(token)], column > 0);
    if (column >= 0 && column < static_cast<int>(m_streamed.size()) && token >= 0 &&
        token < static_cast<int>(m_streamed[static_cast<size_t>(column)].size()))
        return tokenToolTip(m_streamed[static_cast<size_t>(column)][static_cast<size_t>(token)], false);
    return {};
}

}  // namespace ql
